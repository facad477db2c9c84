"""The one mechanism of the public paths (tinygradx.perf, tinygradx.pool, ...): a small module
at the top of the package that forwards every attribute to the module where the code lives, so
a documented path stays put when the code moves."""


def forward(module):
    """(__all__, __doc__, __getattr__, __dir__) for a public path whose code is `module`."""
    names = list(getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")]))

    def __getattr__(name):
        return getattr(module, name)

    def __dir__():
        return dir(module)

    return names, module.__doc__, __getattr__, __dir__
