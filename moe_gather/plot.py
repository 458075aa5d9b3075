"""Throughput against batch size, kernel and peer and roofline, one panel per routing mode (PNG)."""

from __future__ import annotations


def plot_throughput(benches: list[dict], path: str) -> None:
    """benches: the `bench` records of the benchmark tests (case, routing, batch, tflops, peer_tflops, roof_tflops)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    routings = sorted({b["routing"] for b in benches})
    fig, axes = plt.subplots(1, len(routings), figsize=(7 * len(routings), 4.5), squeeze=False)
    for ax, routing in zip(axes[0], routings, strict=True):
        rows = sorted((b for b in benches if b["routing"] == routing), key=lambda b: b["batch"])
        batches = [b["batch"] for b in rows]
        ax.plot(batches, [b["roof_tflops"] for b in rows], "k--", label="roofline (measured ceilings)")
        ax.plot(batches, [b["tflops"] for b in rows], "o-", label="moe-gather")
        if any("peer_tflops" in b for b in rows):
            ax.plot(batches, [b.get("peer_tflops", float("nan")) for b in rows], "s-", label="triton_kernels")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch (tokens before routing)")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"{rows[0]['model']}, {routing} routing")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
