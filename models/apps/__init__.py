"""The applications: the `tinygradx` command, the demo, the LN-placement experiments, pictures,
and the small models that `tinygradx graph` and `tinygradx trace` draw."""
