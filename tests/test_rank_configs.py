"""Config search: the candidate space on a GPU, the ranking, configless Triton descriptions, the tune CLI, the
autotuner's perf_model, the exhaustive sweeps and the measured-regret evaluation."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tomllib

from kernelcast import predict_latency, predict_many, rank_configs, triton_perf_model
from kernelcast.cli import main
from kernelcast.collect.sweeps import SWEEP_DIR, expand_report
from kernelcast.features.desc import parse_desc
from kernelcast.features.gpu import list_gpus
from kernelcast.features.ops import get_op
from kernelcast.features.vector import feature_columns
from kernelcast.predictors.configs import SPACES, candidate_features, desc_columns, runs, space
from kernelcast.training import regret

REPO = Path(__file__).resolve().parent.parent
GEMM = {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "triton", "m": 3000, "n": 4096, "k": 5000}
ATTENTION = {
    "op": "attention",
    "gpu": "H200",
    "dtype": "bf16",
    "backend": "triton",
    "batch": 2,
    "heads_q": 32,
    "heads_kv": 8,
    "seq_q": 1024,
    "seq_kv": 4096,
    "head_dim": 128,
    "causal": True,
}
MOE = {"op": "moe", "gpu": "H200", "dtype": "bf16", "backend": "triton", "tokens": 300, "hidden": 4096}
MOE |= {"ffn": 1408, "experts": 64, "top_k": 6}
BIG = {"block_m": 256, "block_n": 256, "block_k": 128, "group_m": 8, "num_warps": 8, "num_stages": 5, "split_k": 1}
SMALL = {"block_m": 64, "block_n": 64, "block_k": 32, "group_m": 8, "num_warps": 4, "num_stages": 3, "split_k": 1}


def test_space_excludes_what_the_h200_shared_memory_cannot_hold():
    """256x256x128 in 5 bf16 stages on wgmma (an aligned k: both operands pipelined) needs 5*(256*128+128*256)*2
    = 655,360 B of shared memory; an H200 block gets 232,448 (227 KiB): never a candidate, and a clear error when it
    is the only one asked for."""
    assert BIG in [json.loads(c) for c in space("gemm")]  # in the space before the GPU fit
    aligned = {**GEMM, "k": 4096}
    ranked = rank_configs(aligned)
    assert ranked.attrs["candidates"] == len(space("gemm")) == 12_000
    assert 0 < ranked.attrs["fit"] == len(ranked) < 12_000
    big = [c for c in ranked["config"] if (c["block_m"], c["block_n"], c["block_k"]) == (256, 256, 128)]
    assert not big  # even 2 stages (262,144 B) are too much
    assert any((c["block_m"], c["block_n"], c["block_k"]) == (256, 128, 32) for c in ranked["config"])
    with pytest.raises(ValueError, match=r"no candidate config fits h200_sxm \(1 asked\)"):
        rank_configs(aligned, candidates=[BIG])


def test_the_fit_follows_each_gpu_s_shared_memory_and_the_operands_alignment():
    """A100 (164 KiB) keeps fewer configs than B200 (228 KiB) when both operands are pipelined (k % 16 == 0); with
    a ragged k neither is (one buffer each, features.ops.gemm.triton_gemm_operands) and the same configs run on
    both — but A100's mma.sync holds the dot's operand fragments in registers (B200's tcgen05 reads shared memory),
    so more of them spill there and fewer are ranked."""
    aligned = {**GEMM, "k": 4096}
    a100 = rank_configs({**aligned, "gpu": "A100"}).attrs["fit"]
    b200 = rank_configs({**aligned, "gpu": "B200"}).attrs["fit"]
    assert a100 < b200
    ragged = {**GEMM, "k": 4095}
    ran = [
        runs(candidate_features(desc_columns(parse_desc({**ragged, "gpu": g})), "gemm")[1]) for g in ("A100", "B200")
    ]
    assert np.array_equal(*ran)
    assert rank_configs({**ragged, "gpu": "A100"}).attrs["fit"] < rank_configs({**ragged, "gpu": "B200"}).attrs["fit"]


@pytest.mark.parametrize("desc", [GEMM, ATTENTION, MOE], ids=lambda d: d["op"])
def test_ranking_is_sorted_best_first_with_intervals(desc):
    ranked = rank_configs(desc, top=7)
    assert list(ranked.columns) == ["config", "latency_us", "low_us", "high_us", "in_distribution"]
    assert len(ranked) == 7
    lat = ranked["latency_us"].to_numpy()
    assert np.all(np.diff(lat) >= 0)
    assert np.all(ranked["low_us"] <= lat) and np.all(lat <= ranked["high_us"])
    assert set(ranked["config"][0]) == set(SPACES[desc["op"]])
    full = rank_configs(desc)
    assert full["latency_us"].min() == lat[0]  # top=7 is the head of the full ranking
    # the ranking is what predict_latency answers for each config
    for cfg, us in zip(ranked["config"][:3], lat[:3]):
        assert predict_latency({**desc, "config": cfg}).latency_us == pytest.approx(us, rel=1e-5)


def test_candidates_restrict_and_are_validated_with_the_op_messages():
    ranked = rank_configs(GEMM, candidates=[SMALL, {**SMALL, "block_m": 128}, SMALL])
    assert len(ranked) == 2  # a config given twice is ranked once
    with pytest.raises(ValueError, match=r"candidates\[1\]: kernel_desc\['config.block_m'\] must be a power of two"):
        rank_configs(GEMM, candidates=[SMALL, {**SMALL, "block_m": 96}])
    with pytest.raises(ValueError, match=r"candidates\[0\]: kernel_desc\['config.tile'\] must be absent: known keys"):
        rank_configs(GEMM, candidates=[{**SMALL, "tile": 3}])
    with pytest.raises(ValueError, match=r"candidates\[0\]: kernel_desc\['config.split_k'\] must be an integer"):
        rank_configs(GEMM, candidates=[{k: v for k, v in SMALL.items() if k != "split_k"}])
    with pytest.raises(ValueError, match=r"candidates must be a non-empty list of config mappings; got \[\]"):
        rank_configs(GEMM, candidates=[])
    with pytest.raises(ValueError, match=r"candidates must be a non-empty list.*; got \{'block_m'"):
        rank_configs(GEMM, candidates=SMALL)
    with pytest.raises(ValueError, match=r"top must be a positive integer or None; got 0"):
        rank_configs(GEMM, top=0)


def test_only_triton_backends_of_config_ops_rank():
    with pytest.raises(ValueError, match=r"kernel_desc\['backend'\] must be 'triton' to rank configs of op 'gemm'"):
        rank_configs({**GEMM, "backend": "cublas"})
    copy = {"op": "copy", "gpu": "H200", **get_op("copy").example}
    with pytest.raises(ValueError, match=r"kernel_desc\['op'\] must be one of gemm, attention, moe \(ops with a"):
        rank_configs(copy)
    with pytest.raises(ValueError, match=r"kernel_desc\['m'\] must be an integer in \[1, 16777216\]; got 0"):
        rank_configs({**GEMM, "m": 0})


@pytest.mark.parametrize("desc", [GEMM, MOE], ids=lambda d: d["op"])
def test_a_triton_description_without_config_is_predicted_at_the_top_pick(desc):
    top = rank_configs(desc, top=1)
    pred = predict_latency(desc)
    assert pred.latency_us == pytest.approx(top["latency_us"][0], rel=1e-5)
    assert "no config given: predicted at the top-ranked config" in pred.assumptions
    assert json.dumps(top["config"][0], sort_keys=True) in pred.assumptions
    given = predict_latency({**desc, "config": top["config"][0]})
    assert given.latency_us == pred.latency_us and "no config given" not in given.assumptions
    # predict_many answers the same rows the same way, mixed with configured ones
    many = predict_many([desc, {**desc, "config": top["config"][0]}, {**desc, "config": None}])
    assert many["latency_us"].tolist() == pytest.approx([pred.latency_us] * 3, rel=1e-5)
    assert parse_desc(desc).config is None


def test_tune_cli_json_is_the_ranking(capsys):
    fields = [f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in GEMM.items()]
    assert main(["tune", *fields, "--top", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ranked = rank_configs(GEMM, top=3)
    assert [r["config"] for r in out["ranked"]] == ranked["config"].tolist()
    assert out["candidates"] == 12_000 and out["fit"] == rank_configs(GEMM).attrs["fit"]
    assert main(["tune", *fields, "--top", "2"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("config") and len(table) == 4 and "best 2 of" in table[-1]
    assert main(["tune", *fields[:-1], "m=0"]) == 2
    assert "kernelcast tune: error: kernel_desc['m'] must be" in capsys.readouterr().err


def test_perf_model_reads_triton_autotuner_kwargs():
    """Triton 3.6's Autotuner.prune_configs calls perf_model(**named_args, **kwargs, **config.all_kwargs()):
    the kernel's arguments by name plus the config's meta-parameters, num_warps, num_ctas and num_stages
    (triton is not installed here; the call is made with exactly that keyword shape and a real bf16 tensor)."""
    torch = pytest.importorskip("torch")
    a = torch.empty(2, dtype=torch.bfloat16)
    model = triton_perf_model("gemm", "H200")
    meta = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}
    kwargs = {"a_ptr": a, "b_ptr": a, "c_ptr": a, "M": 3000, "N": 4096, "K": 5000, "stride_am": 5000}
    us = model(**kwargs, **meta, num_warps=4, num_ctas=1, num_stages=3)
    assert us == predict_latency({**GEMM, "config": SMALL}).latency_us
    with pytest.raises(ValueError, match=r"perf_model: shape 'k' is read from kernel argument 'K', which the call"):
        model(**{k: v for k, v in kwargs.items() if k != "K"}, **meta, num_warps=4, num_stages=3)
    moe = triton_perf_model("moe", "H200", fixed={k: v for k, v in MOE.items() if k not in ("op", "gpu")})
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1}
    got = moe(a_ptr=a, N=2816, K=4096, EM=5000, **cfg, num_warps=4, num_ctas=1, num_stages=3)
    want = {"block_m": 16, "block_n": 32, "block_k": 64, "group_m": 1, "num_warps": 4, "num_stages": 3}
    assert got == predict_latency({**MOE, "config": want}).latency_us
    with pytest.raises(ValueError, match=r"op must be one of gemm, attention, moe"):
        triton_perf_model("copy", "H200")


def _sweep(name: str):
    return expand_report(name, "H200", seed=16)


@pytest.mark.parametrize(
    "name,op,shapes,configs",
    [("gemm_triton_tune", "gemm", 50, 68), ("triton_attention_tune", "attention", 20, 30), ("moe_tune", "moe", 15, 26)],
)
def test_tune_sweeps_measure_every_config_on_every_shape_and_all_fit(name, op, shapes, configs):
    report = _sweep(name)
    assert not report.skipped
    descs = [d for d, _ in report.items]
    shape = [json.dumps({k: v for k, v in d.to_dict().items() if k != "config"}, sort_keys=True) for d in descs]
    by_shape = pd.Series([d.config for d in descs]).groupby(shape).nunique()
    assert len(by_shape) == shapes and (by_shape == configs).all()
    cols = {k: np.asarray([d.to_row()[k] for d in descs], dtype=object) for k in descs[0].to_row()}
    assert runs(feature_columns(cols, op, learned=True)).all()  # none is a wasted `unsupported` row
    for d in descs:
        cfg = dict(d.config)
        assert all(cfg[k] in SPACES[op][k] for k in SPACES[op]), cfg


def test_tune_pool_seeds_are_used_by_no_other_sweep_of_their_op():
    """A config-search set's pools are seeded by seeds no other sweep of the same op draws with (another op's pool
    with the same seed draws other keys: gemm_triton_tune2 and triton_attention_tune share 1611/1612), save two
    config-search sets of one op that measure the same configs on other shapes."""
    seeds = {}
    for path in sorted(SWEEP_DIR.glob("*.toml")):
        for kind in ("grid", "random"):
            for block in tomllib.loads(path.read_text()).get(kind, []):
                for value in block.values():
                    if isinstance(value, dict) and "pool_seed" in value:
                        seeds.setdefault((block["op"], value["pool_seed"]), set()).add(path.stem)
    tune_sets = {*regret.TUNE_SWEEPS.values(), "gemm_triton_tune2", "triton_attention_tune2"}
    tune = {s: names for s, names in seeds.items() if names & tune_sets}
    assert len(tune) == 9 and all(names <= tune_sets for names in tune.values()), tune
    # the one seed two config-search sets share: triton_attention_tune2 measures the first set's configs on new shapes
    assert {s for s, names in tune.items() if len(names) > 1} == {("attention", 1612)}, tune


def test_fixed_config_is_chosen_on_the_other_shapes():
    """Synthetic numbers (no measured frame has this structure): config a wins shapes 0 and 1, b wins shape 2 by a
    little and loses badly elsewhere. Left out, shape 2 gets a (best on shapes 0, 1); in-sample, a too."""
    times = [pd.Series({"a": 1.0, "b": 3.0}), pd.Series({"a": 1.0, "b": 3.0}), pd.Series({"a": 1.1, "b": 1.0})]
    loo, oracle = regret._fixed_picks(times)
    assert loo == ["a", "a", "a"] and oracle == "a"
    times[2] = pd.Series({"a": 20.0, "b": 1.0})  # now b is best on average: shapes 0, 1 left out still pick b
    loo, oracle = regret._fixed_picks(times)
    assert oracle == "b" and loo == ["b", "b", "a"]


KEYS = ["m", "n", "k", "dtype", "layout"]


def _committed_exhaustive(shapes: int) -> pd.DataFrame:
    """Real rows: the 2026-11-29 Triton GEMM grid (gemm_triton.toml, ~53 configs measured on each shape; training
    rows, so figures on them judge the evaluation's mechanics, not the model): ``shapes`` shapes with >= 40."""
    files = sorted((REPO / "datasets" / "gemm").glob("kernelcast_h200_sxm_20261129_s00*of002.parquet"))
    rows = regret.measured_rows(pd.concat([pd.read_parquet(f) for f in files], ignore_index=True), "gemm")
    counts = rows.groupby(KEYS)["config"].nunique()
    return rows.set_index(KEYS).loc[counts[counts >= 40].index[:shapes]].reset_index()


def test_regret_on_committed_exhaustive_rows():
    keys = KEYS
    small = _committed_exhaustive(4)
    picks = regret.shape_picks(small, "gemm")
    assert len(picks) == 4 and (picks["configs"] >= 40).all()
    for _, shape in picks.iterrows():
        desc = {"op": "gemm", "backend": "triton", "batch": 1, **json.loads(shape["shape"]), "gpu": shape["gpu"]}
        mine = small[(small[keys] == pd.Series({k: desc[k] for k in keys})).all(axis=1)]
        times = mine.groupby("config")["latency_us"].median()
        top = rank_configs(desc, candidates=[json.loads(c) for c in times.index], top=5)
        top_times = [times[json.dumps(c, sort_keys=True)] for c in top["config"]]
        assert shape["kernelcast_top1_regret"] == pytest.approx(top_times[0] / times.min())
        assert shape["kernelcast_top5_autotune_regret"] == pytest.approx(min(top_times) / times.min())
        assert shape["best_us"] == times.min()
    for column in [c for c in picks if c.endswith("_regret")]:
        assert (picks[column].dropna() >= 1).all()
    table = regret.summary(picks)
    top1 = next(r for r in table if r["method"] == "kernelcast_top1")
    assert top1["shapes"] == 4 and top1["within_5pct"] == (picks["kernelcast_top1_regret"] <= 1.05).mean()
    assert top1["best_in_top5"] == (picks["best_rank"] <= 5).mean()


def test_a_measured_best_that_config_search_does_not_rank_counts_against_it():
    """On this second config-search shape (m 3495, n 10528, k 121) the measured best config is one rank_configs
    drops by its spill estimate: the pick's regret is against it and the best ranks after every ranked config."""
    rows = regret.measured_rows(
        pd.read_parquet(REPO / "datasets" / "gemm" / "kernelcast_h200_sxm_20261202_tune2.parquet"), "gemm"
    )
    rows = rows[(rows["m"] == 3495) & (rows["n"] == 10528) & (rows["k"] == 121)]
    times = rows.groupby("config")["latency_us"].median()
    desc = {"op": "gemm", "backend": "triton", "gpu": "h200_sxm", "dtype": "bf16", "m": 3495, "n": 10528, "k": 121}
    ranked = [
        json.dumps(c, sort_keys=True)
        for c in rank_configs(desc, candidates=[json.loads(c) for c in times.index])["config"]
    ]
    assert times.idxmin() not in ranked and len(ranked) < len(times)
    (pick,) = regret.shape_picks(rows, "gemm").to_dict("records")
    assert pick["best_rank"] == len(ranked) + 1 and pick["best_us"] == times.min()
    assert (
        pick["kernelcast_top1_regret"] == pytest.approx(times[ranked[0]] / times.min())
        and pick["kernelcast_top1_regret"] > 1
    )


def test_exhaustive_rows_written_before_a_field_existed_are_read_with_its_default():
    """The Triton attention tune set predates attention's ``mask`` field: its 600 original rows are read (mask
    false), not dropped as invalid (which left eval_regret without attention rows)."""
    frame = pd.read_parquet(REPO / "datasets" / "attention" / "kernelcast_h200_sxm_20261201_tune.parquet")
    assert "mask" not in frame
    rows = regret.measured_rows(frame, "attention")
    assert len(rows) == frame["repeat_of"].isna().sum() == 600 and not rows["mask"].any()


def test_vllm_default_config_follows_tokens_against_experts():
    assert regret.vllm_default_config(64, 64)["block_m"] == 16
    assert regret.vllm_default_config(65, 64) == {
        "block_m": 64,
        "block_n": 64,
        "block_k": 32,
        "group_m": 8,
        "num_warps": 4,
        "num_stages": 3,
    }


def test_eval_regret_without_tune_rows_says_what_to_run(tmp_path):
    (tmp_path / "files.toml").write_text(
        '[[file]]\npath = "gemm/x.parquet"\nrole = "test"\nsweeps = ["gemm_triton_test"]\n'
    )
    with pytest.raises(ValueError, match=r"lists no test file of sweep 'gemm_triton_tune': run benchmarks/results"):
        regret.tune_rows("gemm", datasets=tmp_path)


def test_every_database_gpu_can_be_ranked_on():
    """Each GPU spec carries the shared memory and registers the fit reads; the analytical model answers where no
    learned model covers the GPU."""
    for gpu in list_gpus():
        ranked = rank_configs({**ATTENTION, "gpu": gpu.name}, top=1)
        assert len(ranked) == 1 and 0 < ranked.attrs["fit"] <= 192, gpu.name


def test_a_sweep_point_without_a_triton_config_is_skipped_with_the_reason(tmp_path, monkeypatch):
    from kernelcast.collect import sweeps

    (tmp_path / "bare.toml").write_text(
        '[[grid]]\nop = "gemm"\nbackend = "triton"\ndtype = "bf16"\nm = 64\nn = 64\nk = 64\n'
    )
    monkeypatch.setattr(sweeps, "SWEEP_DIR", tmp_path)
    report = sweeps.expand_report("bare", "H200")
    assert not report.items and report.skipped[0][1] == "a measured Triton kernel needs an explicit config"


def test_evaluate_split_tune_logs_regret_per_op_and_gpu_to_mlflow(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    from kernelcast.training import tracking

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    (tmp_path / "gemm").mkdir()
    _committed_exhaustive(3).assign(op="gemm", backend="triton").to_parquet(tmp_path / "gemm" / "tune.parquet")
    card = '[[file]]\npath = "gemm/tune.parquet"\nrole = "test"\nsweeps = ["gemm_triton_tune"]\n'
    (tmp_path / "files.toml").write_text(card)
    result = regret.evaluate_tune("gemm", datasets=tmp_path)
    assert result["shapes"] == 3
    runs = tracking.search(["gemm"])
    assert len(runs) == 1 and runs["tags.split"].iloc[0] == "tune"
    top1 = next(r for r in result["table"] if r["method"] == "kernelcast_top1")
    assert runs["metrics.tune.h200_sxm.kernelcast_top1.mean_regret"].iloc[0] == pytest.approx(top1["mean_regret"])


def _tune_shape():
    """One exhaustively measured H200 shape of the tune set: its description and {config json: measured µs}."""
    t = pd.read_parquet(Path("datasets/gemm/kernelcast_h200_sxm_20261201_tune.parquet"))
    t = t[(t["status"] == "ok") & t["repeat_of"].isna()]
    (m, n, k), rows = next(iter(t.groupby(["m", "n", "k"])))
    first = rows.iloc[0]
    desc = {"op": "gemm", "gpu": "H200", "dtype": first["dtype"], "backend": "triton", "m": int(m), "n": int(n)}
    desc.update(k=int(k), layout=first["layout"], batch=int(first["batch"]))
    return desc, dict(zip(rows["config"], rows["latency_us"]))


def test_verify_measures_the_top_k_and_returns_the_measured_best():
    """The measuring seam replays the committed H200 measurements of every candidate (the collector needs a GPU)."""
    from kernelcast.verify import verify_configs

    desc, measured = _tune_shape()
    candidates = [json.loads(c) for c in measured]

    def replay(descs):
        return [{"status": "ok", "latency_us": measured[json.dumps(d["config"], sort_keys=True)]} for d in descs]

    out = verify_configs(desc, top=5, candidates=candidates, measure=replay)
    ranked = rank_configs(desc, candidates=candidates, top=5)
    top5 = [measured[json.dumps(c, sort_keys=True)] for c in ranked["config"]]
    assert len(out) == 5 and out.attrs["best_us"] == min(top5)
    assert out["measured_us"].is_monotonic_increasing
    assert out.attrs["regret"] == pytest.approx(top5[0] / min(top5)) and out.attrs["regret"] >= 1.0
    with pytest.raises(ValueError, match="top must be a positive integer"):
        verify_configs(desc, top=0, measure=replay)


def test_tune_verify_needs_a_gpu_host(capsys):
    fields = ["op=gemm", "gpu=H200", "dtype=bf16", "backend=triton", "m=512", "n=512", "k=512"]
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if has_gpu:
        pytest.skip("a GPU host: tests/test_gpu_workloads.py runs the real verify")
    assert main(["tune", *fields, "--verify", "3"]) != 0
    assert "GPU host" in capsys.readouterr().err


def test_eval_regret_with_data_needs_its_own_json_out(tmp_path):
    """The default JSON holds the tune files' figures: --data without --json-out is refused before anything runs,
    and the default file is not rewritten."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "eval_regret.py"
    default = script.parent / "results" / "eval_regret.json"
    before = default.stat().st_mtime_ns if default.exists() else None
    done = subprocess.run(
        [sys.executable, str(script), "--ops", "gemm", "--data", str(tmp_path / "rows.parquet")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "--json-out: required with --data" in done.stderr
    assert (default.stat().st_mtime_ns if default.exists() else None) == before
