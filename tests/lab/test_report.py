"""Reports: HTML with embedded plots, CSV/JSON, failures shown, bad input refused."""

from __future__ import annotations

import csv
import json

import pytest

from trustlab.cli import main
from trustlab.experiments.registry import run_argv
from trustlab.report import write_report
from trustlab.report.plots import PlotError, render
from trustlab.report.records import failure


@pytest.fixture(scope="module")
def tm_record():
    return run_argv("timing-model", ["--profile", "infineon-2010", "--profile", "atmel-2010"]).to_record()



def test_report_has_references_plots_tables_and_provenance(tmp_path, tm_record):
    index = write_report([tm_record], tmp_path)
    page = index.read_text()
    assert page.count("<img ") == len(tm_record["plots"]) + 1 >= 4  # + the overview of all references
    assert (tmp_path / "plots" / "overview.png").exists()
    assert "data:image/png;base64," in page  # self-contained
    assert "Reference comparison" in page and "Table II" in page and "infineon-2010" in page
    rows = list(csv.DictReader((tmp_path / "references.csv").open()))
    assert len(rows) == 16
    seal = next(r for r in rows if r["label"] == "TPM_Seal on infineon-2010")
    assert float(seal["reference"]) == 180.8 and abs(float(seal["error"])) < 0.1 and "Table II" in seal["source"]
    assert json.loads((tmp_path / "results.json").read_text())[0]["experiment"] == "timing-model"
    assert sorted(p.name for p in (tmp_path / "plots").iterdir())[0].endswith(".png")


def test_report_renders_in_chromium_without_broken_images(tmp_path, tm_record, image_check):
    bad_plot = dict(tm_record, plots=tm_record["plots"] + [{"kind": "pie", "series": []}])
    records = [bad_plot, failure("ghost", ["--x", "1"], "RuntimeError: boom")]
    for inline in (True, False):
        out = tmp_path / f"inline-{inline}"
        result = image_check(write_report(records, out, inline=inline))
        assert result["images"] == len(tm_record["plots"]) + 1 and result["broken"] == []


def test_chromium_check_detects_a_broken_image(tmp_path, tm_record, image_check):
    index = write_report([tm_record], tmp_path, inline=False)
    victim = sorted((tmp_path / "plots").iterdir())[0]
    victim.write_bytes(b"not a png")
    assert len(image_check(index)["broken"]) == 1


def test_failures_and_bad_plots_are_shown_not_fatal(tmp_path, tm_record):
    records = [dict(tm_record, plots=[{"kind": "pie", "series": []}]),
               failure("ghost", ["--x", "1"], "RuntimeError: <boom>")]
    page = write_report(records, tmp_path).read_text()
    assert "could not be drawn" in page and "unknown plot kind" in page
    assert "ghost — failed" in page and "RuntimeError: &lt;boom&gt;" in page  # escaped
    assert "1 of 2 runs failed" in page


@pytest.mark.parametrize("spec, message", [
    ({"kind": "line", "series": [{"x": [1, 2], "y": [1]}]}, "2 x values but 1 y"),
    ({"kind": "bar", "series": [{"x": ["a"], "y": ["tall"]}]}, "non-numeric"),
    ({"kind": "line"}, "no series"),
])
def test_bad_plot_specs_raise_plot_error(tmp_path, spec, message):
    with pytest.raises(PlotError, match=message):
        render(spec, tmp_path / "x.png")


def test_loglog_drops_nonpositive_points(tmp_path):
    spec = {"kind": "loglog", "series": [{"label": "s", "x": [0, 1, 10], "y": [1, 0, 5]}]}
    assert render(spec, tmp_path / "x.png").stat().st_size > 1000


def test_cli_report_and_errors(tmp_path, tm_record, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text(json.dumps(tm_record))
    assert main(["report", str(tmp_path / "in"), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "index.html").exists()
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["report", str(tmp_path / "bad.json"), "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err
    assert "bad.json: not JSON (line 1" in err and "Traceback" not in err
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    (tmp_path / "none.json").write_text("[]")  # was a page of 0 runs, exit 0
    assert main(["report", str(tmp_path / "none.json"), "--out", str(tmp_path / "o3")]) == 2
    assert "none.json: no result records" in capsys.readouterr().err and not (tmp_path / "o3").exists()


def test_report_accepts_a_sweep_results_file_and_links_runs(tmp_path):
    from trustlab.sweep import parse, run_sweep

    spec = parse({"name": "s", "experiment": "lab-counting", "grid": {"x": [1, 2]}}, "t")
    run_sweep(spec, tmp_path, jobs=1, progress=False)
    assert main(["report", str(tmp_path / "s" / "results.json"), "--out", str(tmp_path / "r")]) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert 'href="#lab-counting-2"' in page and 'id="lab-counting-2"' in page


def test_record_meta_says_how_to_run_it_again(tm_record):
    args = tm_record["meta"]["args"]
    assert args["profile"] == ["infineon-2010", "atmel-2010"] and args["noise"] == 0.0


@pytest.mark.parametrize("jobs", [2, 3])  # one drawing worker beside the page's writer; two
def test_parallel_figure_drawing_gives_the_same_report(tmp_path, jobs):
    records = [run_argv("lab-counting", ["--x", str(x)]).to_record() for x in range(8)]
    records.append(dict(records[0], plots=[{"kind": "pie", "series": []}]))
    one = write_report(records, tmp_path / "one", jobs=1)
    two = write_report(records, tmp_path / "two", jobs=jobs)
    pngs = sorted(p.name for p in (tmp_path / "one" / "plots").iterdir())
    assert len(pngs) == 8 and pngs == sorted(p.name for p in (tmp_path / "two" / "plots").iterdir())
    for name in pngs:
        assert (tmp_path / "one" / "plots" / name).read_bytes() == (tmp_path / "two" / "plots" / name).read_bytes()
    assert "unknown plot kind" in two.read_text() and one.read_text().count("<img") == 8
    files = sorted(str(p.relative_to(tmp_path / "one")) for p in (tmp_path / "one").rglob("*.*")
                   if p.name != "index.html")  # written while the figures are drawn: the same
    assert files == sorted(str(p.relative_to(tmp_path / "two")) for p in (tmp_path / "two").rglob("*.*")
                           if p.name != "index.html")
    assert "results.json" in files and any(f.startswith("tables") for f in files)
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def test_hostile_records_cost_a_figure_not_the_report(tmp_path):
    record = run_argv("lab-counting", ["--x", "1"]).to_record()
    record["plots"] = ["not a dict", {"kind": "line", "logx": True, "series": [{"x": ["a", "b"], "y": [1, None]}]},
                       {"kind": "bar", "series": [{"x": [[1]], "y": [1]}]}]
    record["references"] = ["junk", {"label": "<script>", "reference": 0, "model": 1}]
    record["params"] = {"big": list(range(10000))}
    page = write_report([record], tmp_path).read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "could not be drawn" in page and len(page) < 200_000


def test_a_repeated_figure_is_drawn_once_and_copied(tmp_path, monkeypatch):
    import trustlab.report.writer as writer

    record = run_argv("lab-counting", ["--x", "1"]).to_record()
    bad = {"kind": "pie", "series": []}
    records = [dict(record, plots=record["plots"] + [bad]), dict(record, plots=record["plots"] + [bad])]
    drawn: list = []
    real = writer.render
    monkeypatch.setattr(writer, "render", lambda spec, path: drawn.append(spec) or real(spec, path))
    page = write_report(records, tmp_path).read_text()
    n = len(record["plots"])
    assert n >= 1 and len(drawn) == n + 1  # each distinct spec once (the bad one included)
    for k in range(1, n + 1):
        first, second = (tmp_path / "plots" / f"{records[0]['experiment']}-{i}-{k}.png" for i in (1, 2))
        assert first.read_bytes() == second.read_bytes()
    assert page.count("unknown plot kind") == 2 and not list((tmp_path / "plots").glob(".*"))
