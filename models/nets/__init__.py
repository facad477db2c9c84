"""The networks: the original encoder-decoder, GPT, a BERT encoder, their shared layers, and
decoding (greedy, beam search, sampling). Built only from tinygradx's public API."""
