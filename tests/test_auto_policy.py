"""``auto`` (issue 29.4): the policy it picks for each kind of study, its switch as a study grows, what it displays,
and that it is the default for new studies while stored studies keep their policy (SQLite and Postgres)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import unique
from localbo.policies import PolicyConfigError, registry
from localbo.policies.auto import GLOBAL_MAX_N, SMALL_DESIGN, AutoState, Switch, choose
from localbo.policies.requests import make_request

Auto = registry()["auto"]
SPACE3 = {n: {"type": "float", "low": 0.0, "high": 1.0} for n in "abc"}
MIXED = {"a": {"type": "categorical", "choices": ["x", "y"]}, "b": {"type": "float", "low": 0, "high": 1}}


@pytest.mark.parametrize(
    ("kind", "dim", "needs", "n", "candidates", "expected"),
    [
        ("continuous", 3, set(), 0, 0, "ei"),
        ("continuous", 3, set(), GLOBAL_MAX_N, 0, "minucb"),
        ("continuous", 25, set(), 0, 0, "mpd"),
        ("continuous", 25, set(), 4 * 25 - 1, 0, "mpd"),
        ("continuous", 25, set(), 4 * 25, 0, "minucb"),  # mpd stalls later: minucb from the best point
        ("continuous", 25, {"parameter_constraints"}, 0, 0, "minucb"),  # mpd does not respect a polytope
        ("continuous", 4, {"constraints"}, 0, 0, "turbo"),
        ("continuous", 12, {"failures"}, 0, 0, "turbo"),
        ("continuous", 6, {"constraints", "safety"}, 0, 0, "turbo"),
        ("categorical", 6, {"constraints", "failures"}, 0, 0, "ei"),
        ("continuous", 2, {"objectives"}, 0, 0, "qlognehvi"),
        ("continuous", 10, {"objectives"}, 0, 0, "qlognehvi"),  # from its small design
        ("continuous", 10, {"objectives", "parameter_constraints"}, 20 * 10, 0, "morbo"),
        ("continuous", 10, {"objectives", "constraints"}, 0, 0, "minucb"),  # qlognehvi far behind on C2DTLZ2
        ("continuous", 10, {"objectives", "constraints"}, 5 * 10, 0, "morbo"),
        ("continuous", 11, {"objectives"}, 0, 0, "minucb"),
        ("continuous", 10, {"objectives", "failures"}, 0, 0, "minucb"),
        ("continuous", 12, {"objectives"}, 5 * 12 - 1, 0, "minucb"),
        ("continuous", 12, {"objectives", "constraints"}, 5 * 12, 0, "morbo"),  # minucb's window full: spread
        ("continuous", 12, {"objectives", "failures"}, 5 * 12, 0, "minucb"),  # morbo does not model failures
        ("continuous", 5, {"objectives"}, 500, 0, "qlognehvi"),
        ("categorical", 12, {"objectives"}, 0, 0, "qlognehvi"),
        ("finite", 3, set(), 0, 500, "chaining-ucb"),
        ("finite", 3, {"failures"}, 0, 500, "ucb"),
        ("finite", 3, set(), 0, 10_000, "ucb"),
        ("finite", 3, {"objectives"}, 0, 500, "random"),
    ],
)
def test_auto_picks_a_policy_that_serves_the_study(kind, dim, needs, n, candidates, expected) -> None:  # noqa: ANN001
    name, why = choose(kind, dim, frozenset(needs), n, candidates)
    assert name == expected, why
    cls = registry()[name]
    assert kind in cls.spaces and frozenset(needs) <= cls.handles
    assert len(why) > 20  # a sentence a person reads in the display


def test_no_policy_for_safe_mode_on_categoricals_names_safety() -> None:
    with pytest.raises(PolicyConfigError) as caught:
        Auto.check_needs("categorical", 4, frozenset({"constraints", "safety"}))
    assert caught.value.field == "safety" and "categorical" in str(caught.value)


@pytest.mark.usefixtures("one_torch_thread")
def test_auto_switches_from_global_to_local_at_the_best_point_and_says_so() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, 3, generator=g, dtype=torch.float64)
    y = (X - 0.3).pow(2).sum(-1)
    first = Auto().suggest(make_request("auto", X, y, config={"configs": {"ei": {"candidates": 64}}}))
    assert first.state.chosen == "ei" and first.state.inner["data"]["n"] == 12  # the inner state is ei's own
    X = torch.cat([X, torch.rand(GLOBAL_MAX_N - 12, 3, generator=g, dtype=torch.float64)])
    y = (X - 0.3).pow(2).sum(-1)
    out = Auto().suggest(make_request("auto", X, y, state=first.state))
    assert out.state.chosen == "minucb"
    # the GP data a GPU would see (LOCALBO_GPU_MIN_SIZE): all n before a choice, then the chosen policy's bound
    config = Auto.Config(configs={"ei": {"candidates": 64}})
    assert Auto.gp_points(Auto.State(), config, 3, 10_000) == 10_000
    assert Auto.gp_points(first.state, config, 3, 10_000) == GLOBAL_MAX_N  # ei's max_data
    assert Auto.gp_points(out.state, config, 3, 10_000) == 15  # minucb's window, 5 d
    assert out.state.x0 == X[int(y.argmin())].tolist()  # the local policy starts at the best point so far
    from localbo.policies.auto import inner_config

    assert inner_config("minucb", Auto.Config(), None).output_warp == "power"  # auto's measured setting
    assert inner_config("ei", Auto.Config(), None).winsorize  # likewise (results/probes/*_ei_winsorize_100.md)
    assert not inner_config("ei", Auto.Config(configs={"ei": {"winsorize": False}}), None).winsorize
    mine = Auto.Config(configs={"minucb": {"output_warp": "none"}})
    assert inner_config("minucb", mine, None).output_warp == "none"  # the study's own setting comes first
    assert inner_config("minucb", Auto.Config(), None).samples_per_iteration is None  # d, the paper's batches
    assert out.X.shape[0] == 1 + 3  # minucb's batch at d = 3: x_t and d exploration points
    assert [(s.policy, s.n) for s in out.state.switches] == [("ei", 12), ("minucb", GLOBAL_MAX_N)]
    shown = Auto.display(out.state, Auto.Config(), GLOBAL_MAX_N)
    assert shown is not None and shown.numbers["auto: chose"] == "minucb"
    assert "thinned" in str(shown.numbers["auto: why"]) and shown.numbers["auto: switches"] == (
        f"ei at n = 12 -> minucb at n = {GLOBAL_MAX_N}"
    )
    assert shown.centre == out.state.x0  # minucb's own display, under auto's lines
    lower, upper = Auto.fallback_box(out.state, Auto.Config(), 3)
    assert all(lo <= c <= hi for lo, c, hi in zip(lower, out.state.x0, upper, strict=True)) and upper[0] - lower[0] < 1


@pytest.mark.usefixtures("one_torch_thread")
def test_a_local_choice_on_results_told_before_the_first_starts_at_the_best_of_them() -> None:
    g = torch.Generator().manual_seed(1)
    X = torch.rand(GLOBAL_MAX_N, 2, generator=g, dtype=torch.float64)
    y = (X - 0.3).pow(2).sum(-1)
    out = Auto().suggest(make_request("auto", X, y))  # a fresh state: the results were added, never asked
    assert out.state.chosen == "minucb" and out.state.x0 == X[int(y.argmin())].tolist()


@pytest.mark.usefixtures("one_torch_thread")
def test_many_coordinates_start_with_mpd_and_hand_over_to_minucb_at_4_d_results() -> None:
    d = 12
    g = torch.Generator().manual_seed(2)
    X = torch.rand(4 * d - 1, d, generator=g, dtype=torch.float64)
    y = (X - 0.3).pow(2).sum(-1)
    first = Auto().suggest(make_request("auto", X, y))
    assert first.state.chosen == "mpd" and "4 d = 48" in str(first.state.why)
    X = torch.cat([X, torch.rand(1, d, generator=g, dtype=torch.float64)])
    y = (X - 0.3).pow(2).sum(-1)
    out = Auto().suggest(make_request("auto", X, y, state=first.state))
    assert out.state.chosen == "minucb" and out.state.x0 == X[int(y.argmin())].tolist()
    assert [(s.policy, s.n) for s in out.state.switches] == [("mpd", 4 * d - 1), ("minucb", 4 * d)]
    assert out.X.shape == (1 + d, d)  # minucb's first batch at its x0: x_t and d exploration points
    assert choose("continuous", d, frozenset(), 0, descent=0)[0] == "minucb"  # ``mpd_until: 0``: minucb at once
    stored = first.state.model_copy(update={"chosen": "minucb", "inner": None})  # a study from before mpd came first
    kept = Auto().suggest(make_request("auto", X[:-5], y[:-5], state=stored))
    assert kept.state.chosen == "minucb" and len(kept.state.switches) == 1  # it does not go back to mpd
    from localbo.policies.auto import inner_config

    assert Auto._inner(first.state, Auto.Config())[2].samples_per_iteration is None  # the paper's batches of d
    mine = Auto.Config(configs={"mpd": {"samples_per_iteration": 10}})
    assert inner_config("mpd", mine, None).samples_per_iteration == 10  # the study's own setting comes first
    assert Auto.Config().mpd_until == 4 and Auto.Config(mpd_until=0).mpd_until == 0
    with pytest.raises(ValueError, match="mpd_until"):
        Auto.Config(mpd_until=-1)


def test_several_objectives_with_failures_say_why_the_scalarised_policy_stays() -> None:
    from localbo.policies.auto import choose

    name, why = choose("continuous", 8, frozenset({"objectives", "failures"}), 100)
    assert name == "minucb" and "morbo from" not in why and "qlognehvi and morbo do not serve failures" in why
    assert "until 20 d = 160 results" in choose("continuous", 8, frozenset({"objectives"}), 10)[1]


def test_several_objectives_on_6_to_10_coordinates_run_qlognehvi_from_a_small_design_then_morbo() -> None:
    """From 6 to 10 coordinates: qlognehvi with 5 design points and fresh fits (``SMALL_DESIGN``, kept in the state
    so the study's config is the same at every suggest) until ``qlognehvi_until`` d results, then morbo; above 10
    coordinates minucb first, as before; at 5 and under qlognehvi throughout, from the small design too without outcome
    constraints; on categorical spaces qlognehvi as it is."""
    from localbo.policies.auto import study_settings

    objectives = frozenset({"objectives"})
    assert choose("continuous", 10, objectives, 199)[0] == "qlognehvi"
    assert choose("continuous", 10, objectives, 200)[0] == "morbo"  # 20 d results
    assert choose("continuous", 10, objectives, 30, until=3)[0] == "morbo"
    assert choose("continuous", 11, objectives, 10)[0] == "minucb"
    assert (
        study_settings("qlognehvi", "continuous", 6, objectives) == SMALL_DESIGN == {"n_init": 5, "warm_start": False}
    )
    assert study_settings("qlognehvi", "continuous", 5, objectives) == SMALL_DESIGN  # (d <= 5: qlognehvi throughout)
    assert study_settings("qlognehvi", "continuous", 5, objectives | {"constraints"}) == {}
    assert study_settings("qlognehvi", "continuous", 11, objectives) == {}
    assert study_settings("qlognehvi", "categorical", 8, objectives) == {}
    assert study_settings("morbo", "continuous", 8, objectives) == {}
    assert Auto.Config().qlognehvi_until == 20
    with pytest.raises(ValueError, match="qlognehvi_until"):
        Auto.Config(qlognehvi_until=-1)


@pytest.mark.usefixtures("one_torch_thread")
def test_auto_runs_qlognehvi_with_its_small_design_and_a_study_setting_wins() -> None:
    d = 7
    X = torch.quasirandom.SobolEngine(d, scramble=True, seed=3).draw(12, dtype=torch.float64)
    Y = torch.stack([(X - 0.25).pow(2).sum(-1), (X - 0.75).pow(2).sum(-1)], -1)
    small = {"num_restarts": 1, "raw_samples": 16, "mc_samples": 16, "maxiter": 10, "front_starts": 0}
    request = make_request("auto", X, Y[:, 0], config={"configs": {"qlognehvi": small}})
    out = Auto().suggest(dataclasses.replace(request, Y=Y))
    assert out.state.chosen == "qlognehvi" and out.state.settings == {"n_init": 5, "warm_start": False}
    assert out.state.inner is not None and out.state.inner["data"]["hypers"], "past its 5-point design: a model"
    from localbo.policies.auto import inner_config

    assert inner_config("qlognehvi", Auto.Config(), None, out.state.settings).n_init == 5
    mine = Auto.Config(configs={"qlognehvi": {"n_init": 16}})
    assert inner_config("qlognehvi", mine, None, out.state.settings).n_init == 16  # the study's own setting first
    again = make_request("auto", X, Y[:, 0], state=out.state, config=mine)
    assert Auto().suggest(dataclasses.replace(again, Y=Y)).state.inner["data"]["design_size"] == 16


def test_morbo_after_sets_when_several_objectives_hand_the_front_to_morbo() -> None:
    from localbo.policies.auto import choose

    objectives = frozenset({"objectives"})
    assert choose("continuous", 12, objectives, 36)[0] == "minucb"  # the default: 5 d = 60 results
    name, why = choose("continuous", 12, objectives, 36, spread=3)
    assert name == "morbo" and "past 3 d = 36" in why
    assert "morbo from 30 results" in choose("continuous", 12, objectives, 10, spread=2.5)[1]
    assert Auto.Config().morbo_after == 5 and Auto.Config(morbo_after=2.5).morbo_after == 2.5
    with pytest.raises(ValueError, match="morbo_after"):
        Auto.Config(morbo_after=-1)


@pytest.mark.usefixtures("one_torch_thread")
def test_several_objectives_switch_from_minucb_to_morbo_moving_two_coordinates_on_the_front() -> None:
    d = 11  # beyond MO_SMALL_DESIGN_MAX_DIM
    g = torch.Generator().manual_seed(1)
    X = torch.rand(5 * d, d, generator=g, dtype=torch.float64)
    Y = torch.stack([(X - 0.25).pow(2).sum(-1), (X - 0.75).pow(2).sum(-1)], -1)
    request = make_request("auto", X[:-1], Y[:-1, 0], config={"configs": {"morbo": {"candidates": 64}}})
    first = Auto().suggest(dataclasses.replace(request, Y=Y[:-1]))
    assert first.state.chosen == "minucb"
    request = make_request("auto", X, Y[:, 0], state=first.state, config={"configs": {"morbo": {"candidates": 64}}})
    out = Auto().suggest(dataclasses.replace(request, Y=Y))
    assert out.state.chosen == "morbo" and [(s.policy, s.n) for s in out.state.switches] == [
        ("minucb", 5 * d - 1),
        ("morbo", 5 * d),
    ]
    assert out.state.inner is not None and out.state.inner["data"]["regions"], "morbo centred its regions on the front"
    from localbo.policies.auto import inner_config

    assert inner_config("morbo", Auto.Config(), None).perturbed_coordinates == 2.0  # auto's measured setting
    assert out.X.shape == (1, d) and bool(((out.X >= 0) & (out.X <= 1)).all())
    shown = Auto.display(out.state, Auto.Config(configs={"morbo": {"candidates": 64}}), 5 * d)
    assert shown is not None and "morbo" in str(shown.numbers["auto: why"])


def test_qlognehvi_searches_wide_for_its_first_20_d_results_at_5_coordinates_and_under() -> None:
    """Ax's acquisition search (``WIDE_SEARCH``) for the first 20 d results on d <= 5 without outcome constraints;
    it depends on n, so it is not kept in the state."""
    from localbo.policies.auto import WIDE_SEARCH, inner_config, search_settings

    objectives = frozenset({"objectives"})
    assert search_settings("qlognehvi", "continuous", 5, objectives, 99) == WIDE_SEARCH
    assert WIDE_SEARCH == {"num_restarts": 20, "raw_samples": 1024}
    assert search_settings("qlognehvi", "continuous", 5, objectives, 100) == {}  # 20 d: back to its own search
    assert search_settings("qlognehvi", "continuous", 2, objectives, 39) == WIDE_SEARCH
    assert search_settings("qlognehvi", "continuous", 2, objectives, 40) == {}
    assert search_settings("qlognehvi", "continuous", 6, objectives, 10) == {}  # unmeasured beyond 5
    assert search_settings("qlognehvi", "continuous", 5, objectives | {"constraints"}, 10) == {}
    assert search_settings("qlognehvi", "categorical", 3, objectives, 10) == {}
    assert search_settings("ei", "continuous", 3, frozenset(), 10) == {}
    mine = Auto.Config(configs={"qlognehvi": {"num_restarts": 2}})
    assert inner_config("qlognehvi", mine, None, {**SMALL_DESIGN, **WIDE_SEARCH}).num_restarts == 2  # the study's


@pytest.mark.usefixtures("one_torch_thread")
def test_auto_passes_the_wide_search_to_qlognehvi_and_keeps_only_its_design_settings(monkeypatch) -> None:  # noqa: ANN001
    qlognehvi = registry()["qlognehvi"]
    real, seen = qlognehvi.suggest, []

    def spy(self, request):  # noqa: ANN001, ANN202  (records the search auto asked for, runs a cheap one)
        seen.append((request.config.num_restarts, request.config.raw_samples, int(request.X.shape[0])))
        cheap = request.config.model_copy(update={"num_restarts": 1, "raw_samples": 16, "mc_samples": 16})
        return real(self, dataclasses.replace(request, config=cheap))

    monkeypatch.setattr(qlognehvi, "suggest", spy)
    d = 2
    X = torch.quasirandom.SobolEngine(d, scramble=True, seed=5).draw(41, dtype=torch.float64)
    Y = torch.stack([(X - 0.25).pow(2).sum(-1), (X - 0.75).pow(2).sum(-1)], -1)
    early = make_request("auto", X[:8], Y[:8, 0])
    out = Auto().suggest(dataclasses.replace(early, Y=Y[:8]))
    assert out.state.chosen == "qlognehvi" and out.state.settings == SMALL_DESIGN  # the search is not stored
    late = make_request("auto", X[:40], Y[:40, 0], state=out.state)
    Auto().suggest(dataclasses.replace(late, Y=Y[:40]))
    assert seen == [(20, 1024, 8), (4, 128, 40)]


@pytest.mark.usefixtures("one_torch_thread")
def test_a_study_that_reached_morbo_does_not_go_back_to_qlognehvi() -> None:
    """On 6 to 10 coordinates a study stored under the older rule (minucb, then morbo from 5 d results) is in morbo
    before qlognehvi's 20 d: it stays there; a study still on minucb moves on to qlognehvi."""
    d = 7
    g = torch.Generator().manual_seed(4)
    X = torch.rand(5 * d, d, generator=g, dtype=torch.float64)
    Y = torch.stack([(X - 0.25).pow(2).sum(-1), (X - 0.75).pow(2).sum(-1)], -1)
    small = {"morbo": {"candidates": 64}, "qlognehvi": {"num_restarts": 1, "raw_samples": 16, "mc_samples": 16,
                                                        "maxiter": 10, "front_starts": 0}}  # fmt: skip
    stored = AutoState(chosen="morbo", why="older rule", switches=[Switch(n=5 * d - 1, policy="morbo", why="older")])
    request = make_request("auto", X, Y[:, 0], state=stored, config={"configs": small})
    out = Auto().suggest(dataclasses.replace(request, Y=Y))
    assert out.state.chosen == "morbo" and len(out.state.switches) == 1
    on_minucb = stored.model_copy(update={"chosen": "minucb"})
    request = make_request("auto", X, Y[:, 0], state=on_minucb, config={"configs": small})
    moved = Auto().suggest(dataclasses.replace(request, Y=Y))
    assert moved.state.chosen == "qlognehvi" and moved.state.settings == SMALL_DESIGN


@pytest.mark.usefixtures("one_torch_thread")
def test_a_new_study_gets_auto_by_default_and_runs_bo(api) -> None:  # noqa: ANN001
    name = unique("auto")
    body = {"name": name, "space": SPACE3, "seed": 3, "policy_config": {"configs": {"ei": {"candidates": 64}}}}
    r = api.post("/api/v1/studies", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["policy"] == "auto"
    for _ in range(6):  # past ei's initial design (max(d + 1, 5) = 5), so its GP is fitted
        (trial,) = api.post(f"/api/v1/studies/{name}/ask", json={}).json()["trials"]
        assert trial["source"] == "auto", trial
        value = sum((v - 0.3) ** 2 for v in trial["params"].values())
        told = api.post(f"/api/v1/studies/{name}/trials/{trial['number']}/tell", json={"value": value})
        assert told.status_code == 200, told.text
    view = api.get(f"/api/v1/studies/{name}/policy").json()
    assert view["policy"] == "auto" and view["last_policy_error"] is None
    numbers = view["display"]["numbers"]
    assert numbers["auto: chose"] == "ei" and "global log-EI" in numbers["auto: why"]
    assert view["display"]["phase"] == "model-based"
    old = unique("sobol")  # a study that names its policy keeps it
    r = api.post("/api/v1/studies", json={"name": old, "space": SPACE3, "policy": "sobol"})
    assert r.status_code == 201 and r.json()["policy"] == "sobol"
    schema = api.get("/openapi.json").json()["components"]["schemas"]
    assert any(s.get("properties", {}).get("policy", {}).get("default") == "auto" for s in schema.values())


@pytest.mark.usefixtures("one_torch_thread")
def test_a_stored_study_of_two_objectives_hands_its_front_to_morbo(api) -> None:  # noqa: ANN001
    """Six coordinates: qlognehvi from its small design until ``qlognehvi_until`` d results (5 here), then morbo,
    through the service: auto's settings of qlognehvi live in the stored state across suggests."""
    name = unique("auto-mo")
    space = {f"x{i}": {"type": "float", "low": 0.0, "high": 1.0} for i in range(6)}
    objectives = [{"metric": "yield", "direction": "maximize"}, {"metric": "cost", "direction": "minimize"}]
    small = {"num_restarts": 1, "raw_samples": 16, "mc_samples": 16, "maxiter": 10, "front_starts": 0}
    configs = {"morbo": {"candidates": 64}, "qlognehvi": small}
    body = {"name": name, "space": space, "objectives": objectives, "seed": 5,
            "policy_config": {"qlognehvi_until": 5, "configs": configs}}  # fmt: skip
    assert api.post("/api/v1/studies", json=body).status_code == 201
    g = torch.Generator().manual_seed(5)
    for _ in range(5 * 6 - 2):  # two results short of the hand-over
        x = torch.rand(6, generator=g, dtype=torch.float64)
        values = {"yield": 1 - float((x - 0.25).pow(2).sum()), "cost": float((x - 0.75).pow(2).sum())}
        params = {f"x{i}": float(v) for i, v in enumerate(x)}
        added = api.post(f"/api/v1/studies/{name}/trials", json={"params": params, "values": values})
        assert added.status_code == 201, added.text
    chosen = []
    for _ in range(10):  # qlognehvi's 5-point design is planned as the first results arrive, then served
        (trial,) = api.post(f"/api/v1/studies/{name}/ask", json={}).json()["trials"]
        assert trial["source"] == "auto", trial
        view = api.get(f"/api/v1/studies/{name}/policy").json()
        assert view["last_policy_error"] is None, view
        chosen.append(view["display"]["numbers"]["auto: chose"])
        if chosen[-1] == "morbo":
            break
        x = torch.tensor([trial["params"][f"x{i}"] for i in range(6)], dtype=torch.float64)
        values = {"yield": 1 - float((x - 0.25).pow(2).sum()), "cost": float((x - 0.75).pow(2).sum())}
        told = api.post(f"/api/v1/studies/{name}/trials/{trial['number']}/tell", json={"values": values})
        assert told.status_code == 200, told.text
    assert chosen[0] == "qlognehvi" and chosen[-1] == "morbo", chosen
    switches = view["display"]["numbers"]["auto: switches"]
    assert switches.startswith("qlognehvi at n = ") and " -> morbo at n = " in switches, switches
    assert int(switches.split()[-1]) >= 5 * 6, switches
    assert view["display"]["numbers"]["front size"] >= 1  # morbo's own display, under auto's lines


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"policy_config": {"configs": {"nope": {}}}}, "policy_config.configs", ["unknown policy 'nope'"]),
        ({"policy_config": {"configs": {"ei": {"candidates": 1}}}}, "policy_config.configs.ei.candidates", []),
        # each setting checked as its policy's own at creation (x0 of the wrong length failed every suggest)
        ({"policy_config": {"configs": {"minucb": {"x0": [0.5]}}}}, "policy_config.configs.minucb.x0", ["3 values"]),
        ({"policy_config": {"configs": {"minucb": {"beta": 1e300}}}}, "policy_config.configs.minucb.beta", []),
        (
            {"space": MIXED,
             "constraints": [{"metric": "p", "op": ">=", "bound": 0}], "objectives": [{"metric": "v"}],
             "safety": {"max_violation_probability": 0.05}},
            "safety", ["no policy serves", "categorical"],
        ),
    ],
)  # fmt: skip
def test_what_auto_cannot_serve_is_a_422_naming_the_field(api, body, field, words) -> None:  # noqa: ANN001
    name = unique("auto-bad")
    r = api.post("/api/v1/studies", json={"name": name, "space": SPACE3, **body})
    assert r.status_code == 422, r.text
    detail = str(r.json())
    assert field in detail and all(w in detail for w in words), detail
    assert api.get(f"/api/v1/studies/{name}").status_code == 404  # nothing stored
