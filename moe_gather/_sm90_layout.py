"""The sm90 kernel's weight layout, built on the host: MXFP4 codes re-packed so that each thread's 32-bit word holds
exactly the 8 values of its wgmma A fragment, stored tile-major, with the block scales beside them per K tile; and
what the kernel computes from them, emulated in torch for the CPU tests."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton

from .mxfp4 import MX_BLOCK, ExpertShape, MXFP4Weights, decode_e8m0, e2m1_values, refuse_nan_scales, unpack_codes

# e4m3 bytes of the e2m1 magnitudes 0, .5, 1, 1.5 | 2, 3, 4, 6: byte-permute tables, byte i = code i.
E4M3_OF_E2M1_LO = 0x3C383000
E4M3_OF_E2M1_HI = 0x4C484440
# The fast mode's byte tables at d = 0: e4m3 bytes of the e2m1 magnitudes times 2 ** 6 (0, 32, 64, 96 | 128, 192,
# 256, 384); d binades lower is d * 8 off each nonzero byte, exact while the smallest (2 ** (5 - d)) stays normal.
FAST_TABLE_LO = 0x6C686000
FAST_TABLE_HI = 0x7C787470
FAST_WINDOW = 11  # binades a block's scale may sit below its tile's largest in the fast mode (d = 0 .. 11)
FAST_SHIFT = 6  # the fast mode's tables hold the values times 2 ** 6
PRECISIONS = ("accurate", "fast")
# How the fast precision's weights sit in memory: "mxfp4" (packed codes, folded in the kernel) or "fp8" (beside them,
# the folded e4m3 bytes themselves, which the large tiles hand to wgmma from shared memory, unconverted).
LAYOUTS = ("mxfp4", "fp8")


def layout_refusal(layout: str, precision: str | None) -> str | None:
    """Why a command line's --layout cannot go with its --precision (None: it can); "default" is the default
    precision, "accurate"."""
    if layout != "mxfp4" and precision != "fast":
        return f"--layout {layout} holds the fast precision's folded bytes: add --precision fast"
    return None


class FoldError(ValueError):
    """Weights whose block scales do not fold exactly into e4m3 (the fast precision's window)."""


TILE_K = 128  # K per pipeline stage: 4 e8m0 blocks, one 128-byte swizzled row of fp8 x
ROW_BLOCK = 64  # weight rows of one warpgroup: the words are stored [row block, K tile, row, 64 bytes]
CHUNK_K = 64  # K per group of 8 packed words in the weight layout (prepare_weights)


@dataclass(frozen=True)
class Sm90Weights(ExpertShape):
    """MXFP4 weights in the sm90 kernel's layout (prepare_weights)."""

    words: torch.Tensor  # uint8 [E, N / 64, cdiv(K, 128), 64, 64]: codes re-packed, tile-major, zeros past K
    scales: torch.Tensor  # uint8 [E, cdiv(K, 128), N, 4]: e8m0 per K tile, then row, then block; zero past K
    k: int
    f16: bool = False  # the fp16 wgmma path, for rows whose block scales spread too widely for fp8 (prepare_weights)
    zero_scale: bool = True  # a block with nonzero codes has scale e8m0 0 (2 ** -127): one more op per scale
    fast: bool = False  # the fast mode's encoding: block scales folded into the e4m3 values, one promotion per K tile
    # Layout "fp8" (fast only): the fold's e4m3 bytes in K order, uint8 [E, N / 64, cdiv(K, 128), 64, 128], for the
    # configs that read them (Sm90Config.fp8_layout); None in layout "mxfp4".
    folded: torch.Tensor | None = None

    _leading = "scales"

    @property
    def n(self) -> int:
        return self.scales.shape[2]

    @property
    def encoding(self) -> str:
        """For reports: "f16", "spread", "fast" or "fast+fp8"."""
        return "f16" if self.f16 else "spread" if not self.fast else "fast" if self.layout == "mxfp4" else "fast+fp8"

    @property
    def layout(self) -> str:
        """LAYOUTS: "fp8" where the folded bytes are held beside the packed codes."""
        return "mxfp4" if self.folded is None else "fp8"

    @property
    def precision(self) -> str:
        """ "fast" (block scales folded into the fp8 values, promoted once per 128 K) or "accurate" (exact per 32 K)."""
        return "fast" if self.fast else "accurate"


F16_SPREAD = 16  # binades between a row's largest and smallest nonzero block scale above which fp16 wgmma is used


def prepare_weights(
    w: MXFP4Weights, f16: bool | None = None, precision: str = "accurate", layout: str = "mxfp4"
) -> Sm90Weights:
    """Re-pack codes and scales for the kernel, in the encoding of `precision` (PRECISIONS).

    Words: K = 64c + 32b + 16h + 4q + i (chunk c, block parity b, half h, quad q, byte i). Chunk c of a row is 8
    32-bit words, word 2q + b holding the 8 codes (h, i) of quad q: exactly the fp8 values that the thread of lane
    quad q holds in wgmma's A fragment for block 2c + b (K = 4q + i and 16 + 4q + i of the block). Within a word,
    magnitudes (3 bits) are byte-permute selectors, half h's byte i in nibble 4h + i; signs sit where one shift lands
    them on the fp8 sign bits: half 0's sign of byte i at bit 8i + 3 (shifted left by 4), half 1's at bit 8i + 7.
    The words are stored tile-major, [E, row block of 64, K tile of 128, row, 64 bytes], K padded with zeros to whole
    tiles: a stage's copy of a row block is one 4 KB piece, one DRAM stream instead of 64 of 64 bytes.
    Scales: [E, K tile, N, block of the tile], so that one K tile's scales for a block of rows are contiguous.
    `zero_scale`: whether a block with a nonzero code has scale e8m0 0 (2 ** -127, which the kernel then builds as
    an fp32 subnormal, one instruction more per scale); a block of zeros gives zeros at any scale, so the kernel reads
    e8m0 0 as 0 when no such block exists (and quantizers write all-zero blocks with scale 0).

    The fp8 path's bit-spread encoding (faster than magnitudes as selectors of a byte-permute table, which the fp16
    path keeps): the codes' bits sit where
    an e4m3 byte has them: code (s, e1, e0, m) as the byte s << 7 | e1 << 4 | e0 << 3 | m << 2 is the e4m3 value of
    the e2m1 value times 2 ** -6, exactly (e2m1's exponent 0 lands on e4m3's subnormals). Half 0's byte i holds bits
    7, 4, 3, 2 of byte i (one AND yields its fp8 word); half 1 sits in bits 5, 6, 1, 0 (s, e1, e0, m), which two
    shifts and two logic ops move onto 7, 4, 3, 2. Five instructions per 8 values instead of eight; the kernel
    multiplies the accumulator by 2 ** 6 at the end.

    `f16` (default: whether some row's nonzero block scales span more than F16_SPREAD binades): the kernel runs fp16
    wgmma instead (weights and x are exact in fp16; it accumulates each 32-block in fp32 where fp8 wgmma keeps ~13
    bits, which outputs born of cancellation between very large blocks cannot afford). Its words hold the values of
    the fp16 A fragment instead: K = 16h + 8j + 2q + l for byte i = 2j + l of half h.

    `precision="fast"`: the fp8 path's K order with the fp16 path's selector encoding, and the scales as one word per
    row and K tile (fast_scale_words), which the kernel folds into the e4m3 values through a byte table per row and
    block (docs/sm90.md); weights whose scales do not fit the fold's window are refused by name.

    `layout="fp8"` (fast only): beside the words, the fold's e4m3 bytes themselves (folded_bytes), which the configs
    that read them (Sm90Config.fp8_layout: the large tiles) hand to wgmma from shared memory: the same values and
    sums, one byte a weight more in memory (gpt-oss-120b, K padded to 2944: 271 MB per shard and layer, beside the
    words' 136 MB).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    fast = precision == "fast"
    if layout != "mxfp4" and not fast:
        raise ValueError(
            f"prepare_weights: layout={layout!r} holds the fast precision's folded values; precision='fast'"
        )
    if fast and f16:
        raise ValueError("prepare_weights: the fast precision runs fp8 wgmma; f16=True is the accurate path's")
    if fast:
        f16 = False
    if f16 is None:
        nonzero = torch.where(w.scales > 0, w.scales, 255).amin(-1).clamp(max=254).to(torch.int32)
        f16 = bool((w.scales.amax(-1).to(torch.int32) - nonzero > F16_SPREAD).any())
    refuse_nan_scales(w)
    e, n, k = w.num_experts, w.codes.shape[1], w.k
    if n % ROW_BLOCK:
        raise ValueError(f"prepare_weights: the sm90 layout needs N a multiple of {ROW_BLOCK}, got {n}")
    tiles = triton.cdiv(k, TILE_K)
    nonzero_blocks = ((w.codes & 0x77) != 0).reshape(e, n, -1, MX_BLOCK // 2).any(-1)  # a magnitude not 0
    if fast:  # first: weights that do not fold are refused before the words are built
        scales = fast_scale_words(w.scales, nonzero_blocks, tiles)
    chunks = tiles * (TILE_K // CHUNK_K)
    words = torch.empty((e, n, chunks * CHUNK_K // 2), dtype=torch.uint8, device=w.codes.device)
    i = torch.arange(4, device=w.codes.device)
    for x in range(e):  # one expert at a time bounds the int64 temporaries
        c = torch.nn.functional.pad(unpack_codes(w.codes[x]).to(torch.int64), (0, chunks * CHUNK_K - k))
        if f16:  # K = 64 chunk + 32 b + 16 h + 8 j + 2 q + l
            c = c.reshape(n, chunks, 2, 2, 2, 4, 2).permute(0, 1, 5, 2, 3, 4, 6).reshape(n, chunks, 4, 2, 2, 4)
        else:  # K = 64 chunk + 32 b + 16 h + 4 q + i
            c = c.reshape(n, chunks, 2, 2, 4, 4).permute(0, 1, 4, 2, 3, 5)  # [N, chunk, q, b, h, i]
        if not f16 and not fast:  # the bit-spread encoding
            bits = [(c >> b) & 1 for b in range(4)]  # m, e0, e1, s
            half0 = sum(bit[..., 0, :] << p for bit, p in zip(bits, (2, 3, 4, 7), strict=True))
            half1 = sum(bit[..., 1, :] << p for bit, p in zip(bits, (0, 1, 6, 5), strict=True))
            word = ((half0 + half1) << (8 * i)).sum(-1).reshape(n, -1)
        else:  # byte-permute table selectors (the fp16 path's fixed table, the fast mode's per row and block)
            mag, sign = c & 7, c >> 3
            word = (
                (mag[..., 0, :] << (4 * i)).sum(-1)
                + (mag[..., 1, :] << (16 + 4 * i)).sum(-1)
                + (sign[..., 0, :] << (8 * i + 3)).sum(-1)
                + (sign[..., 1, :] << (8 * i + 7)).sum(-1)
            ).reshape(n, -1)  # [N, K/8] in kernel order, < 2**32
        words[x] = torch.stack([(word >> (8 * byte)) & 0xFF for byte in range(4)], dim=-1).reshape(n, -1)
    if not fast:
        scales = torch.nn.functional.pad(w.scales, (0, 4 * tiles - w.scales.shape[-1]))
        scales = scales.reshape(e, n, tiles, 4).transpose(1, 2).contiguous()
    zero_scale = bool(((w.scales == 0) & nonzero_blocks).any())  # quantizers give all-zero blocks e8m0 0
    words = words.reshape(e, n // ROW_BLOCK, ROW_BLOCK, tiles, TILE_K // 2).transpose(2, 3).contiguous()
    folded = folded_bytes(w, scales) if layout == "fp8" else None
    return Sm90Weights(words, scales, k, f16, zero_scale and not fast, fast, folded)


def fast_scale_words(scales: torch.Tensor, nonzero_blocks: torch.Tensor, tiles: int) -> torch.Tensor:
    """The fast mode's scales: per row and 128-wide K tile one 32-bit word (as 4 bytes, [E, tile, N, 4]) holding the
    tile's reference exponent r (the largest e8m0 of its blocks with a nonzero code) in bits 23..30, so that the word
    masked to them reads as the fp32 2 ** (r - 127), and each block's d = r - e8m0 (0 for a block of zeros) in bits
    4j .. 4j + 3. Refuses, naming the first, a row and tile whose d passes FAST_WINDOW or whose r is 0."""
    e, n, blocks = scales.shape
    pad = 4 * tiles - blocks
    s = torch.nn.functional.pad(scales.to(torch.int64), (0, pad)).reshape(e, n, tiles, 4)
    nz = torch.nn.functional.pad(nonzero_blocks, (0, pad)).reshape(e, n, tiles, 4)
    ref = torch.where(nz, s, -1).amax(-1, keepdim=True)  # -1: a tile of zeros
    d = torch.where(nz, ref - s, 0)
    bad = ((d > FAST_WINDOW).any(-1) | (ref[..., 0] == 0)).nonzero()
    if bad.numel():
        x, row, tile = bad[0].tolist()
        raise FoldError(
            f"weights: expert {x}, row {row}, K tile {tile}: block scales {s[x, row, tile].tolist()} do not fold"
            f" exactly into e4m3 (more than {FAST_WINDOW} binades below the tile's largest, or 2 ** -127); use"
            f" precision='accurate'"
        )
    word = (ref[..., 0].clamp(min=0) << 23) + (d << (4 * torch.arange(4, device=scales.device))).sum(-1)
    word = word.transpose(1, 2).contiguous().to(torch.int32)  # [E, tile, N]; r << 23 < 2 ** 31
    return word.view(torch.uint8).reshape(e, tiles, n, 4)  # little-endian bytes of each word


def folded_bytes(w: MXFP4Weights, scale_words: torch.Tensor) -> torch.Tensor:
    """The fold's e4m3 bytes in K order, tile-major ([E, N / 64, K tile, 64, 128], zeros past K): each value times
    2 ** (6 - d), d its block's binades below its row and tile's reference (fast_scale_words); exact while d <= 11."""
    e, n, k = w.num_experts, w.codes.shape[1], w.k
    tiles = scale_words.shape[1]
    d = _scale_fields(scale_words)[0].reshape(e, n, -1)  # per block
    out = torch.zeros((e, n, tiles * TILE_K), dtype=torch.uint8, device=w.codes.device)
    for x in range(e):  # one expert at a time bounds the float temporaries
        values = e2m1_values(w.codes[x])  # [N, K]
        times = torch.exp2(FAST_SHIFT - d[x, :, : k // MX_BLOCK].to(torch.float32))
        values = values * times.repeat_interleave(MX_BLOCK, dim=-1)
        out[x, :, :k] = values.to(torch.float8_e4m3fn).view(torch.uint8)
    return out.reshape(e, n // ROW_BLOCK, ROW_BLOCK, tiles, TILE_K).transpose(2, 3).contiguous()


def row_major_words(w: Sm90Weights, folded: bool = False) -> torch.Tensor:
    """The words row-major, [E, N, cdiv(K, 128) * 64] (K order within a row as in the kernel); `folded`: the layout
    "fp8" bytes, [E, N, cdiv(K, 128) * 128]."""
    if folded and w.folded is None:
        raise ValueError(f"weights: {w.encoding} weights hold no folded bytes; prepare_weights(..., layout='fp8')")
    words = w.folded if folded else w.words
    e, blocks, tiles, rows, width = words.shape
    return words.transpose(2, 3).reshape(e, blocks * rows, tiles * width)


def emulate_dequant(w: Sm90Weights, folded: bool = False) -> torch.Tensor:
    """What the kernel computes from Sm90Weights, in torch: float64 [E, K, N] (tests compare it to the exact
    dequantization). Bit for bit the kernel's encodings, tables, permutes and sign placement, then the block's power
    of two (the fast mode: the table of the row and block, then the tile's reference power of two). `folded`: from
    the layout "fp8" bytes instead of the words."""
    e, n = w.num_experts, w.n
    if folded:
        values = row_major_words(w, folded=True)[..., : w.k].view(torch.float8_e4m3fn).to(torch.float64)
    else:
        values = _word_values(w)
    if w.fast:
        ref = decode_e8m0(_scale_fields(w.scales)[1], torch.float64) * 2.0**-FAST_SHIFT  # [E, N, tiles]
        return (values * ref.repeat_interleave(TILE_K, dim=-1)[..., : w.k]).transpose(1, 2)
    values = values * (1.0 if w.f16 else 2.0**6)
    s = w.scales.transpose(1, 2).reshape(e, n, -1)[..., : w.k // MX_BLOCK]
    return (values * decode_e8m0(s, torch.float64).repeat_interleave(MX_BLOCK, dim=-1)).transpose(1, 2)


def _word_values(w: Sm90Weights) -> torch.Tensor:
    """The e4m3 values the kernel makes of the words, float64 [E, N, K], before any power of two: its encodings,
    tables, permutes and sign placement bit for bit."""
    e, n = w.num_experts, w.n
    words = row_major_words(w).contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF  # [E, N, K/8]
    lut = E4M3_OF_E2M1_LO | (E4M3_OF_E2M1_HI << 32)
    if w.fast:  # each word's table: its row's d for its block (word 8 chunk + 2 q + b of a tile: block 2 chunk + b)
        d = _scale_fields(w.scales)[0].repeat_interleave(16, dim=-2)  # [E, N, tiles * 16, 4]
        index = torch.arange(words.shape[-1], device=words.device)
        block = 2 * (index % 16 // 8) + index % 2
        d = d.gather(-1, block.expand(e, n, -1)[..., None])[..., 0]
        lut = (FAST_TABLE_LO - d * 0x08080800) | ((FAST_TABLE_HI - d * 0x08080808) << 32)
    halves = []
    if not w.f16 and not w.fast:  # the bit-spread encoding
        moved = (((words << 2) & 0x8C8C8C8C) | ((words >> 2) & 0x10101010)) & 0xFFFFFFFF
        for word in (words & 0x9C9C9C9C, moved):
            halves.append(torch.stack([(word >> (8 * i)) & 0xFF for i in range(4)], dim=-1))
    for half_shift, sign_shift in ((0, 4), (16, 0)) if w.f16 or w.fast else ():  # selectors at bits 0..15 | 16..31
        sel = torch.stack([(words >> (half_shift + 4 * i)) & 7 for i in range(4)], dim=-1)
        sign = torch.stack([((words << sign_shift) >> (8 * i + 7)) & 1 for i in range(4)], dim=-1)
        table = lut[..., None] if w.fast else lut
        halves.append(((table >> (8 * sel)) & 0xFF) | (sign << 7))
    fp8 = torch.stack(halves, dim=-2)  # [E, N, K/8, h, i]
    if w.f16:  # [chunk, q, b, h, j, l] -> K = 64 chunk + 32 b + 16 h + 8 j + 2 q + l
        fp8 = fp8.reshape(e, n, -1, 4, 2, 2, 2, 2).permute(0, 1, 2, 4, 5, 6, 3, 7)
    else:  # [chunk, q, b, h, i] -> K = 64 chunk + 32 b + 16 h + 4 q + i
        fp8 = fp8.reshape(e, n, -1, 4, 2, 2, 4).permute(0, 1, 2, 4, 5, 3, 6)
    fp8 = fp8.reshape(e, n, -1)[..., : w.k]
    return fp8.to(torch.uint8).view(torch.float8_e4m3fn).to(torch.float64)


def _scale_fields(scales: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The fast mode's scale words ([E, tiles, N, 4] bytes) read back: d [E, N, tiles, 4] and the reference e8m0
    [E, N, tiles]."""
    word = scales.to(torch.int64)
    word = (word << (8 * torch.arange(4, device=word.device))).sum(-1).transpose(1, 2)  # [E, N, tiles]
    d = torch.stack([(word >> (4 * j)) & 0xF for j in range(4)], dim=-1)
    return d, (word >> 23) & 0xFF
