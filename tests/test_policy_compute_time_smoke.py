"""The policy compute-time benchmark runs (tiny mode) and writes its table."""

from __future__ import annotations

from pathlib import Path

from conftest import run_benchmark


def test_smoke_prints_and_writes_one_row_per_policy_and_dimension(tmp_path: Path) -> None:
    out = tmp_path / "times.md"
    run_benchmark(
        "policy_compute_time.py", "--smoke", "--threads", "1", "--policies", "minucb,la-minucb,mpd", "--out", str(out)
    )
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| 3 |")]
    assert len(rows) == 3
    sections = [line.split()[0] for line in text.splitlines() if " suggest on cpu" in line]
    assert sections == ["minucb", "la-minucb", "mpd"]
    for row in rows:
        total, fit, step, batch = (float(v) for v in row.split("|")[4:8])
        assert total > 0.0 and total >= fit + batch - 0.1


def test_cost_against_n_times_every_policy_with_and_without_its_bound(tmp_path: Path) -> None:
    out = tmp_path / "cost_n.md"
    run_benchmark(
        "policy_compute_time.py", "--smoke", "--ns", "1", "--uncapped-up-to", "80", "--threads", "1",
        "--policies", "minucb,turbo,ei", "--out", str(out),
    )  # fmt: skip
    rows = [line.split(" | ") for line in out.read_text().splitlines() if line.startswith("| ") and "---" not in line]
    table = {(r[0][2:], int(r[2]), r[3]): r for r in rows[1:]}  # (policy, n, max_data) -> row
    assert set(table) == {("minucb", 40, "-"), ("minucb", 80, "-"), ("turbo", 40, "30"), ("turbo", 80, "30"),
                          ("turbo", 40, "None"), ("turbo", 80, "None"), ("ei", 40, "30"), ("ei", 80, "30"),
                          ("ei", 40, "None"), ("ei", 80, "None")}  # fmt: skip
    assert table[("ei", 80, "30")][4] == "30" and table[("ei", 80, "None")][4] == "80"  # the bound: GP points
    assert table[("minucb", 80, "-")][4] == "15"  # its window: 5 d
    assert all(float(r[5]) > 0 for r in rows[1:])


def test_cost_against_n_with_several_objectives_bounds_the_gps_and_the_baseline(tmp_path: Path) -> None:
    out = tmp_path / "cost_mo.md"
    run_benchmark(
        "policy_compute_time.py", "--smoke", "--ns", "1", "--uncapped-up-to", "80", "--threads", "1",
        "--policies", "qlognehvi", "--objectives", "2", "--out", str(out),
    )  # fmt: skip
    rows = [line.split(" | ") for line in out.read_text().splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0][-1].strip() == "front |"
    table = {(int(r[2]), r[3]): r for r in rows[1:]}  # (n, max_data / max_baseline) -> row
    assert set(table) == {(40, "30 / 30"), (80, "30 / 30"), (40, "None / None"), (80, "None / None")}
    assert table[(80, "30 / 30")][4] == "30" and table[(80, "None / None")][4] == "80"
    assert all(float(r[5]) > 0 and int(r[8].strip(" |")) >= 20 for r in rows[1:])  # half the points on the front
