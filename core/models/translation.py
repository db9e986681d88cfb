"""Sequence-to-sequence translators of papers 000 §4.3 / 001 §3.1: an attentional LSTM (RNN) and a
Transformer (FFNN), with matched parameter counts.

* :class:`LuongSeq2Seq` — the study's model (001 A.1, after Luong, Pham & Manning 2015): a
  bidirectional LSTM encoder, an LSTM decoder and global attention with a dot-product score.
  At target step t with decoder state hₜ and encoder states h̄ₛ (projected to the decoder's
  width, because a bidirectional encoder has twice its width):
      aₜ(s) = softmax_s(hₜᵀ W_k h̄ₛ),   cₜ = Σₛ aₜ(s) W_k h̄ₛ,
      h̃ₜ = tanh(W_c [cₜ; hₜ]),         p(yₜ | y<ₜ, x) = softmax(W_o h̃ₜ).
  (Luong's "dot" score on keys W_k h̄ₛ; W_k is needed only to bridge the 2h → h widths.)
* :class:`TransformerSeq2Seq` — Vaswani et al. (2017): sinusoidal positions, pre-norm encoder
  and decoder stacks of ``torch.nn.TransformerEncoderLayer`` / ``TransformerDecoderLayer``.

:func:`match_transformer` chooses the Transformer's width d_model and feed-forward width so its
parameter count is within 1 % of the LSTM's (the study compares architectures at equal size).
Both models share one interface: ``forward(src, src_len, tgt_in) -> logits`` (teacher forcing)
and ``greedy(src, src_len, max_len) -> token ids`` (batched greedy decoding).

Token ids 0..3 are ``<pad> <sos> <eos> <unk>`` in both vocabularies.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

PAD, SOS, EOS, UNK = 0, 1, 2, 3


def _pick(logits: torch.Tensor, step_transform=None) -> torch.Tensor:
    """The next token of greedy decoding: argmax of the (optionally transformed) distribution."""
    if step_transform is None:
        return logits.argmax(-1)
    return step_transform(torch.log_softmax(logits.double(), -1)).argmax(-1)


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


class LuongSeq2Seq(nn.Module):
    """Bidirectional-LSTM encoder, LSTM decoder, Luong global dot attention (see module docstring)."""

    def __init__(self, src_vocab: int, tgt_vocab: int, emb: int = 150, hidden: int = 200, dropout: float = 0.2):
        super().__init__()
        self.hidden = hidden
        self.src_emb = nn.Embedding(src_vocab, emb, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(tgt_vocab, emb, padding_idx=PAD)
        self.encoder = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
        # the decoder starts from the encoder's final forward and backward states
        self.bridge_h = nn.Linear(2 * hidden, hidden)
        self.bridge_c = nn.Linear(2 * hidden, hidden)
        self.key = nn.Linear(2 * hidden, hidden, bias=False)
        self.decoder = nn.LSTM(emb, hidden, batch_first=True)
        self.combine = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, tgt_vocab)
        self.drop = nn.Dropout(dropout)

    @staticmethod
    def param_count(src_vocab: int, tgt_vocab: int, emb: int, hidden: int) -> int:
        """Closed-form parameter count (PyTorch LSTMs carry two bias vectors per gate block)."""
        h = hidden
        lstm = lambda i: 4 * (h * i + h * h + 2 * h)  # noqa: E731
        return ((src_vocab + tgt_vocab) * emb + 2 * lstm(emb) + 2 * (2 * h * h + h) + 2 * h * h
                + lstm(emb) + 2 * h * h + h + h * tgt_vocab + tgt_vocab)

    def encode(self, src: torch.Tensor, src_len: torch.Tensor):
        """src (B, S) -> keys (B, S, h), padding mask (B, S), initial decoder state."""
        x = self.drop(self.src_emb(src))
        packed = pack_padded_sequence(x, src_len.clamp_min(1).cpu(), batch_first=True, enforce_sorted=False)
        out, (h, c) = self.encoder(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        # h, c: (2, B, h) forward/backward final states -> (1, B, h)
        h0 = torch.tanh(self.bridge_h(torch.cat([h[0], h[1]], 1)))[None]
        c0 = self.bridge_c(torch.cat([c[0], c[1]], 1))[None]
        return self.key(out), src == PAD, (h0.contiguous(), c0.contiguous())

    def _attend(self, dec: torch.Tensor, keys: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        """dec (B, T, h) decoder states -> logits (B, T, V)."""
        scores = torch.bmm(dec, keys.transpose(1, 2))  # (B, T, S) dot score
        scores = scores.masked_fill(pad_mask[:, None, :], float("-inf"))
        context = torch.bmm(torch.softmax(scores, -1), keys)
        attentional = torch.tanh(self.combine(torch.cat([context, dec], -1)))
        return self.out(self.drop(attentional))

    def forward(self, src: torch.Tensor, src_len: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: tgt_in (B, T) starts with <sos>; returns logits (B, T, V)."""
        keys, pad_mask, state = self.encode(src, src_len)
        dec, _ = self.decoder(self.drop(self.tgt_emb(tgt_in)), state)
        return self._attend(dec, keys, pad_mask)

    @torch.no_grad()
    def greedy(self, src: torch.Tensor, src_len: torch.Tensor, max_len: int, step_transform=None) -> torch.Tensor:
        """Batched greedy decoding -> (B, ≤ max_len) ids, <eos> then <pad> after a sentence ends.

        ``step_transform`` maps each step's (B, V) log-probabilities before the argmax."""
        keys, pad_mask, state = self.encode(src, src_len)
        b = src.shape[0]
        token = torch.full((b, 1), SOS, dtype=torch.long, device=src.device)
        done = torch.zeros(b, dtype=torch.bool, device=src.device)
        out = []
        for _ in range(max_len):
            dec, state = self.decoder(self.tgt_emb(token), state)
            token = _pick(self._attend(dec, keys, pad_mask)[:, 0], step_transform)[:, None]  # (B, 1)
            token = token.masked_fill(done[:, None], PAD)
            out.append(token)
            done |= token[:, 0] == EOS
            if bool(done.all()):
                break
        return torch.cat(out, 1)


class PositionalEncoding(nn.Module):
    """Sinusoidal positions (Vaswani et al. 2017, §3.5); a buffer, not a parameter."""

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__()
        pos = torch.arange(max_len)[:, None].float()
        div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div[: d_model // 2])
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.pe[: x.shape[1]]


class TransformerSeq2Seq(nn.Module):
    """Encoder-decoder Transformer (pre-norm layers, final LayerNorms, untied output layer)."""

    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int = 128, heads: int = 4, layers: int = 2,
                 ff: int = 512, dropout: float = 0.2):
        super().__init__()
        self.d_model = d_model
        self.src_emb = nn.Embedding(src_vocab, d_model, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(tgt_vocab, d_model, padding_idx=PAD)
        self.pos = PositionalEncoding(d_model)
        self.drop = nn.Dropout(dropout)
        # pre-norm: trains stably without warm-up on small data (Xiong et al. 2020)
        enc_layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout, batch_first=True, norm_first=True)
        dec_layer = nn.TransformerDecoderLayer(d_model, heads, ff, dropout, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(enc_layer, layers, norm=nn.LayerNorm(d_model), enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(dec_layer, layers, norm=nn.LayerNorm(d_model))
        self.out = nn.Linear(d_model, tgt_vocab)

    @staticmethod
    def param_count(src_vocab: int, tgt_vocab: int, d: int, layers: int, ff: int) -> int:
        """Closed-form parameter count of :class:`TransformerSeq2Seq`."""
        enc = 4 * d * d + 4 * d + 2 * d * ff + ff + d + 4 * d  # self-attention, feed-forward, 2 norms
        dec = 8 * d * d + 8 * d + 2 * d * ff + ff + d + 6 * d  # + cross-attention, 3 norms
        return (src_vocab + tgt_vocab) * d + layers * (enc + dec) + 4 * d + d * tgt_vocab + tgt_vocab

    def _embed(self, emb: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        return self.drop(self.pos(emb(ids) * math.sqrt(self.d_model)))

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pad_mask = src == PAD
        return self.encoder(self._embed(self.src_emb, src), src_key_padding_mask=pad_mask), pad_mask

    def _decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_pad: torch.Tensor) -> torch.Tensor:
        t = tgt_in.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool, device=tgt_in.device).triu(1)  # True = may not attend
        h = self.decoder(self._embed(self.tgt_emb, tgt_in), memory, tgt_mask=causal,
                         tgt_key_padding_mask=tgt_in == PAD, memory_key_padding_mask=src_pad)
        return self.out(h)

    def forward(self, src: torch.Tensor, src_len: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: tgt_in (B, T) starts with <sos>; returns logits (B, T, V)."""
        memory, src_pad = self.encode(src)
        return self._decode(tgt_in, memory, src_pad)

    @torch.no_grad()
    def greedy(self, src: torch.Tensor, src_len: torch.Tensor, max_len: int, step_transform=None) -> torch.Tensor:
        """Batched greedy decoding (the prefix is re-decoded each step: sentences are short);
        ``step_transform`` as in :meth:`LuongSeq2Seq.greedy`."""
        memory, src_pad = self.encode(src)
        b = src.shape[0]
        ys = torch.full((b, 1), SOS, dtype=torch.long, device=src.device)
        done = torch.zeros(b, dtype=torch.bool, device=src.device)
        for _ in range(max_len):
            # finished rows keep getting <pad>; their padded prefix never feeds an unfinished row
            token = _pick(self._decode(ys, memory, src_pad)[:, -1], step_transform).masked_fill(done, PAD)
            ys = torch.cat([ys, token[:, None]], 1)
            done |= token == EOS
            if bool(done.all()):
                break
        return ys[:, 1:]


def match_transformer(target: int, src_vocab: int, tgt_vocab: int, heads: int, layers: int,
                      prefer_d: int, d_model: int = 0) -> tuple[int, int]:
    """(d_model, ff) of the Transformer whose parameter count is closest to ``target``.

    The count is linear in ff, so for each width d (a multiple of 2·heads) ff is solved exactly;
    among widths within 1 % of the target with a usual shape (d ≤ ff ≤ 8d) the one closest to
    ``prefer_d`` (the LSTM's embedding size) wins. ``d_model > 0`` fixes the width.
    """
    step = 2 * heads
    widths = [d_model] if d_model > 0 else list(range(step, 1025, step))
    cands = []
    for d in widths:
        base = TransformerSeq2Seq.param_count(src_vocab, tgt_vocab, d, layers, 0)
        per_ff = layers * 2 * (2 * d + 1)
        ff = max(1, round((target - base) / per_ff))
        err = abs(TransformerSeq2Seq.param_count(src_vocab, tgt_vocab, d, layers, ff) - target) / target
        cands.append((err, d, ff))
    good = [c for c in cands if c[0] < 0.01 and c[1] <= c[2] <= 8 * c[1]]
    if good:
        return min(good, key=lambda c: (abs(c[1] - prefer_d), c[1]))[1:]
    ok = [c for c in cands if c[0] < 0.01 and c[2] >= 8]
    if ok:  # no usual shape: the least unusual one
        return min(ok, key=lambda c: abs(math.log(c[2] / (4 * c[1]))))[1:]
    return min(cands)[1:]
