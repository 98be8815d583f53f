"""The matplotlib figures fabric-report draws for a run, kept open to read their artists (colours, markers, labels,
where the titles lie) instead of their pixels."""
import tempfile
from unittest import mock

import fabricbench_analysis as fa
from fabricbench_analysis.draw import figure_file, plots


def drawn(path) -> dict:
    """file name (sweep_nodes.png ...) -> the Figure as saved (laid out, titles fitted)."""
    figures = {}
    save = figure_file.save

    def keep(fig, out, paths):
        save(fig, out, paths)
        figures[out.name] = fig  # closed, but its artists stay readable

    with tempfile.TemporaryDirectory() as out, mock.patch.object(figure_file, "save", keep):
        plots.plot_run(fa.load(path), out, "png")
    return figures


def tick_colors(labels) -> dict:
    """tick text -> its colour, for the ticks with a text."""
    return {t.get_text(): t.get_color() for t in labels if t.get_text()}


def starred(labels) -> set:
    """The hosts a heat map marks (`* host`)."""
    return {t.get_text()[2:] for t in labels if t.get_text().startswith("* ")}


def clipped_titles(fig) -> list:
    """The titles (a panel's, the figure's) that reach outside the figure, as (text, extent)."""
    renderer = fig.canvas.get_renderer()
    texts = [ax.title for ax in fig.axes] + ([fig._suptitle] if fig._suptitle is not None else [])
    out = []
    for text in texts:
        if not text.get_text():
            continue
        box = text.get_window_extent(renderer)
        if box.x0 < 0 or box.x1 > fig.bbox.width or box.y0 < 0 or box.y1 > fig.bbox.height:
            out.append((text.get_text(), tuple(round(v) for v in box.extents)))
    return out
