"""Everything built on the tinygradx engine, one sub-package per layer (each imports only from
the layers below it and from the engine):

    tasks      the training data: translation and language-model tasks, vocabularies, batching,
               the WordPiece tokenizer (no engine code: plain Python and numpy)
    nets       the networks: transformer (encoder-decoder), gpt, bert, their shared layers,
               decoding
    training   the Trainer, its config, checkpoints and metrics
    apps       the `tinygradx` command, the demo, the experiments, the pictures

Importing `tinygradx.models` loads none of them; import the one you need:
`from tinygradx.models.nets.gpt import GPT, GPTConfig`.
"""
