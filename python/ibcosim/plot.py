"""Plots of results with matplotlib (imported on first use)."""


def _ax(ax):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(7, 4))
    return ax


def finish_times(ranks, ax=None, title=None):
    """Bar chart of the per-rank finish times (us)."""
    ax = _ax(ax)
    ax.bar(ranks["rank"], ranks["finish_ps"] / 1e6, width=0.8)
    ax.set_xlabel("rank")
    ax.set_ylabel("finish time (us)")
    if title:
        ax.set_title(title)
    return ax


def link_heatmap(links, ax=None, title=None, max_rows=64):
    """Links (rows) by windows (columns), the colour the utilisation
    (white 0 to blue 1), from rows of ``ibnet run --link-stats``. With
    more than ``max_rows`` links the busiest are shown."""
    import numpy as np
    ax = _ax(ax)
    if links is None or len(links) == 0:
        raise ValueError("no link statistics (fabric_run(..., link_stats=True) records them)")
    lab = links["node"].astype(str) + "[" + links["port"].astype(str) + "]"
    t = links.assign(label=lab)
    m = t.pivot_table(index="label", columns="window_start_ps", values="utilisation",
                      aggfunc="sum", fill_value=0.0)
    if len(m) > max_rows:
        m = m.loc[m.sum(axis=1).sort_values(ascending=False).index[:max_rows]]
    starts = np.array(m.columns, dtype=float)
    width = float(links["window_end_ps"].iloc[0] - links["window_start_ps"].iloc[0]) or 1.0
    edges = np.append(starts, starts[-1] + width) / 1e6
    im = ax.pcolormesh(edges, np.arange(len(m) + 1), m.values, cmap="Blues", vmin=0.0, vmax=1.0)
    ax.set_yticks(np.arange(len(m)) + 0.5)
    ax.set_yticklabels(m.index, fontsize=6 if len(m) > 24 else 8)
    ax.set_xlabel("simulated time (us)")
    ax.set_ylabel("link (node[port])")
    ax.figure.colorbar(im, ax=ax, label="utilisation")
    if title:
        ax.set_title(title)
    return ax


def latency_histogram(messages, ax=None, bins=50, title=None):
    """Histogram of the message latencies (us)."""
    ax = _ax(ax)
    if messages is None or len(messages) == 0:
        raise ValueError("no message records")
    ax.hist(messages["latency_ps"] / 1e6, bins=bins)
    ax.set_xlabel("message latency (us)")
    ax.set_ylabel("messages")
    if title:
        ax.set_title(title)
    return ax
