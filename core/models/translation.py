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

With ``dp=True`` (a DP-SGD config) the layers whose per-sample gradients Opacus cannot compute
are swapped for equivalent ones built from layers it can: Opacus' ``DPLSTM`` for ``nn.LSTM``,
and :class:`DPAttention` (q, k, v and output projections as ``nn.Linear``) for
``nn.MultiheadAttention``. The function computed and the parameter count are unchanged; only the
parameter names differ, so a DP config always rebuilds its model with the same layers.

Token ids 0..3 are ``<pad> <sos> <eos> <unk>`` in both vocabularies.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, overload

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

if TYPE_CHECKING:
    from opacus.layers import DPLSTM

PAD, SOS, EOS, UNK = 0, 1, 2, 3


def _lstm(input_size: int, hidden: int, dp: bool, **kwargs) -> nn.Module:
    """``nn.LSTM``, or Opacus' ``DPLSTM`` (same maths and parameter count, per-sample gradients)."""
    if not dp:
        return nn.LSTM(input_size, hidden, batch_first=True, **kwargs)
    from opacus.layers import DPLSTM

    lstm = DPLSTM(input_size, hidden, batch_first=True, **kwargs)
    _state_under_lstm_names(lstm)
    return lstm


def _state_under_lstm_names(lstm: DPLSTM) -> None:
    """Keep each of a nested ``DPLSTM``'s tensors once in ``state_dict()``, under ``nn.LSTM``'s name.

    ``DPLSTM`` registers its weights under ``nn.LSTM``'s names (``weight_ih_l0``, ...) *and* keeps
    them in its cells (``l0.ih.weight``, ...). Its state-dict hook, meant to drop the cells' names,
    ignores the prefix and returns a copy, so it does nothing for a DPLSTM nested in a model: both
    names would be saved — the same storage twice, which safetensors refuses. It is replaced by
    one that drops the cells' names in place, and loading fills them back in from ``nn.LSTM``'s.
    """
    aliases = dict(lstm.old_to_new)  # cell name -> nn.LSTM name

    def drop(module, state, prefix, local_metadata) -> None:
        for cell_name in aliases:
            state.pop(prefix + cell_name, None)

    def restore(module, state, prefix, *args) -> None:
        for cell_name, lstm_name in aliases.items():
            if prefix + lstm_name in state:
                state[prefix + cell_name] = state[prefix + lstm_name]

    lstm._state_dict_hooks.clear()  # Opacus' filter (see above)
    lstm.register_state_dict_post_hook(drop)
    lstm.register_load_state_dict_pre_hook(restore)


def _pick(logits: torch.Tensor, step_transform=None) -> torch.Tensor:
    """The next token of greedy decoding: argmax of the (optionally transformed) distribution."""
    if step_transform is None:
        return logits.argmax(-1)
    return step_transform(torch.log_softmax(logits.double(), -1)).argmax(-1)


class LuongSeq2Seq(nn.Module):
    """Bidirectional-LSTM encoder, LSTM decoder, Luong global dot attention (see module docstring)."""

    def __init__(self, src_vocab: int, tgt_vocab: int, emb: int = 150, hidden: int = 200, dropout: float = 0.2,
                 dp: bool = False):
        super().__init__()
        self.hidden = hidden
        self.src_emb = nn.Embedding(src_vocab, emb, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(tgt_vocab, emb, padding_idx=PAD)
        self.encoder = _lstm(emb, hidden, dp, bidirectional=True)
        # the decoder starts from the encoder's final forward and backward states
        self.bridge_h = nn.Linear(2 * hidden, hidden)
        self.bridge_c = nn.Linear(2 * hidden, hidden)
        self.key = nn.Linear(2 * hidden, hidden, bias=False)
        self.decoder = _lstm(emb, hidden, dp)
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
        """src (B, S) -> keys (B, S, h), padding mask (B, S), initial decoder state.

        A batch already sorted by decreasing source length is packed as it is (no permutation):
        DP-SGD training sorts its batches so, because Opacus' per-sample gradients of a packed
        ``DPLSTM`` are in packed (sorted) order and must line up with the other layers' rows.
        """
        x = self.drop(self.src_emb(src))
        lengths = src_len.clamp_min(1).cpu()
        in_order = bool((lengths[1:] <= lengths[:-1]).all())
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=in_order)
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

    pe: torch.Tensor

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


class DPAttention(nn.Module):
    """Multi-head attention (Vaswani et al. 2017) from four ``nn.Linear`` layers, batch first,
    a drop-in for ``nn.MultiheadAttention`` inside ``nn.Transformer*Layer`` whose per-sample
    gradients Opacus computes (its Linear rule sums over the sequence dimension):

        head_i = softmax(Q_i K_iᵀ / √d_h + M) V_i,   out = W_o [head_1; …; head_H],

    Q = W_q x, K = W_k m, V = W_v m, and M the additive mask (−∞ where a boolean mask is True:
    future positions, padding). Same parameter count as ``nn.MultiheadAttention``.

    Opacus' own ``DPMultiheadAttention`` (1.6) refuses the decoder's causal mask and checks a 2-D
    mask against the wrong dimension when ``batch_first=True``, hence this module.
    """

    # read by nn.TransformerEncoderLayer's fast-path checks: this module never takes the fast path
    in_proj_weight = None
    in_proj_bias = None
    _qkv_same_embed_dim = False
    batch_first = True

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model ({d_model}) must be a multiple of heads ({heads})")
        self.num_heads, self.head_dim, self.dropout = heads, d_model // heads, dropout
        self.q, self.k, self.v = (nn.Linear(d_model, d_model) for _ in range(3))
        self.out_proj = nn.Linear(d_model, d_model)

    @overload
    @staticmethod
    def _additive(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor: ...

    @overload
    @staticmethod
    def _additive(mask: None, like: torch.Tensor) -> None: ...

    @staticmethod
    def _additive(mask: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor | None:
        if mask is None or mask.dtype != torch.bool:
            return mask
        return torch.zeros(mask.shape, dtype=like.dtype, device=like.device).masked_fill(mask, float("-inf"))

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                key_padding_mask: torch.Tensor | None = None, need_weights: bool = False,
                attn_mask: torch.Tensor | None = None, is_causal: bool = False, **ignored: object):
        """query (B, T, d), key and value (B, S, d); attn_mask (T, S), key_padding_mask (B, S), each
        boolean (True = may not attend) or additive. Returns (output (B, T, d), None)."""
        b, t, _ = query.shape
        s = key.shape[1]

        def heads(x: torch.Tensor, n: int) -> torch.Tensor:
            return x.reshape(b, n, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, n, d_h)

        q, k, v = heads(self.q(query), t), heads(self.k(key), s), heads(self.v(value), s)
        mask = torch.zeros(b, 1, t, s, dtype=q.dtype, device=q.device)
        if is_causal and attn_mask is None:
            attn_mask = torch.ones(t, s, dtype=torch.bool, device=q.device).triu(1)
        if attn_mask is not None:  # (T, S), or (B·H, T, S) as nn.MultiheadAttention takes it
            extra = self._additive(attn_mask, q)
            mask = mask + (extra[None, None] if extra.dim() == 2 else extra.reshape(b, self.num_heads, t, s))
        if key_padding_mask is not None:
            mask = mask + self._additive(key_padding_mask, q)[:, None, None, :]
        out = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                         dropout_p=self.dropout if self.training else 0.0)
        return self.out_proj(out.transpose(1, 2).reshape(b, t, -1)), None


class TransformerSeq2Seq(nn.Module):
    """Encoder-decoder Transformer (pre-norm layers, final LayerNorms, untied output layer)."""

    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int = 128, heads: int = 4, layers: int = 2,
                 ff: int = 512, dropout: float = 0.2, dp: bool = False, scaled_embeddings: bool = False):
        super().__init__()
        self.d_model = d_model
        self.src_emb = nn.Embedding(src_vocab, d_model, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(tgt_vocab, d_model, padding_idx=PAD)
        if scaled_embeddings:
            # fairseq's initialisation: N(0, 1/d), so that the ×√d of the input gives entries of unit scale,
            # the positions' scale. PyTorch's default N(0, 1) makes them √d ≈ 12 (d = 150): the positions are
            # drowned and each pre-norm sublayer's unit-scale update is small beside the residual stream
            for emb in (self.src_emb, self.tgt_emb):
                nn.init.normal_(emb.weight, 0.0, d_model ** -0.5)
                with torch.no_grad():
                    emb.weight[PAD].zero_()
        self.pos = PositionalEncoding(d_model)
        self.drop = nn.Dropout(dropout)
        # pre-norm: trains stably without warm-up on small data (Xiong et al. 2020)
        enc_layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout, batch_first=True, norm_first=True)
        dec_layer = nn.TransformerDecoderLayer(d_model, heads, ff, dropout, batch_first=True, norm_first=True)
        if dp:  # before the stacks deep-copy the layers; DPAttention is a drop-in for nn.MultiheadAttention
            # (called the same way), not a subclass: mypy's three errors here are that, and accepted
            enc_layer.self_attn = DPAttention(d_model, heads, dropout)
            dec_layer.self_attn = DPAttention(d_model, heads, dropout)
            dec_layer.multihead_attn = DPAttention(d_model, heads, dropout)
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
        """Batched greedy decoding, one new position per step; ``step_transform`` as in
        :meth:`LuongSeq2Seq.greedy`.

        Incremental: with causal self-attention the decoder's states at earlier positions never
        change, so each layer keeps its normalised inputs of the positions decoded so far (the keys
        and values of its self-attention) and only the new position runs through the layers — the
        pre-norm layer of ``nn.TransformerDecoderLayer`` (x += SA(LN₁x); x += CA(LN₂x, memory);
        x += FF(LN₃x)) computed for one query, O(L) instead of re-decoding the prefix (O(L²)).
        Equal to teacher-forcing the decoded prefix up to float rounding. Eval mode only (dropout off).
        """
        memory, src_pad = self.encode(src)
        final_norm = self.decoder.norm
        assert final_norm is not None  # built with norm=nn.LayerNorm
        b = src.shape[0]
        token = torch.full((b,), SOS, dtype=torch.long, device=src.device)
        done = torch.zeros(b, dtype=torch.bool, device=src.device)
        seen: list[torch.Tensor | None] = [None] * len(self.decoder.layers)  # per layer: LN₁ of every position
        out = []
        scale = math.sqrt(self.d_model)
        for t in range(max_len):
            x = (self.tgt_emb(token) * scale + self.pos.pe[t])[:, None]  # (B, 1, d); dropout is off in eval
            for i, layer in enumerate(self.decoder.layers):
                normed = layer.norm1(x)
                before = seen[i]
                keys = normed if before is None else torch.cat([before, normed], 1)
                seen[i] = keys
                x = x + layer.self_attn(normed, keys, keys, need_weights=False)[0]
                x = x + layer._mha_block(layer.norm2(x), memory, None, src_pad)
                x = x + layer._ff_block(layer.norm3(x))
            logits = self.out(final_norm(x))[:, 0]
            # finished rows keep getting <pad>; their states never feed an unfinished row
            token = _pick(logits, step_transform).masked_fill(done, PAD)
            out.append(token)
            done |= token == EOS
            if bool(done.all()):
                break
        return torch.stack(out, 1) if out else torch.zeros(b, 0, dtype=torch.long, device=src.device)


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
