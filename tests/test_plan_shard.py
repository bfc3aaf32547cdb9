"""Plans: deterministic by seed, a re-measure share after the originals, disjoint covering shards; the CLI."""

from __future__ import annotations

import json

import pytest

from kernelcast.collect import cli
from kernelcast.collect.plan import load_plan, make_plan, parse_shard, save_plan, shard, shard_tag

GEMM = {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "cublas", "n": 256, "k": 512}


def descs(count):
    return [{**GEMM, "m": m} for m in range(1, count + 1)]


def test_same_seed_same_plan_other_seed_other_order():
    a, b, c = make_plan(descs(40), 7), make_plan(descs(40), 7), make_plan(descs(40), 8)
    assert [e.to_dict() for e in a.entries] == [e.to_dict() for e in b.entries]
    assert a.plan_id() == b.plan_id() != c.plan_id()
    assert [e.desc.m for e in a.entries[:40]] != list(range(1, 41))  # shuffled
    assert sorted(e.desc.m for e in a.entries[:40]) == list(range(1, 41))  # every description once


@pytest.mark.parametrize("count,share,expected", [(40, 0.1, 4), (41, 0.1, 5), (5, 0.1, 1), (10, 0.5, 5)])
def test_repeat_share_after_originals(count, share, expected):
    plan = make_plan(descs(count), 0, share)
    originals, repeats = plan.entries[:count], plan.entries[count:]
    assert len(repeats) == expected and all(e.repeat_of is None for e in originals)
    assert len({e.repeat_of for e in repeats}) == expected
    for e in repeats:
        assert e.repeat_of < count and plan.entries[e.repeat_of].desc == e.desc
    assert [e.index for e in plan.entries] == list(range(count + expected))


def test_duplicates_collapse_and_bad_input_is_named():
    assert len(make_plan(descs(10) + descs(10), 0).entries) == 11
    with pytest.raises(ValueError, match=r"repeat_share must be a number in \[0.1, 1\]; got 0.05"):
        make_plan(descs(10), 0, 0.05)
    with pytest.raises(ValueError, match="kernel_desc\\['dtype'\\] must be one of"):
        make_plan([{**GEMM, "m": 1, "dtype": "fp6"}], 0)


def test_shards_disjoint_and_covering():
    plan = make_plan(descs(37), 3)
    for n in (1, 2, 5, 16):
        parts = [shard(plan, i, n) for i in range(n)]
        indices = [e.index for p in parts for e in p]
        assert sorted(indices) == list(range(len(plan.entries))) and len(set(indices)) == len(indices)
        assert all(e.index % n == i for i, p in enumerate(parts) for e in p)
    assert shard_tag(3, 16) == "s003of016"
    with pytest.raises(ValueError, match=r"shard index i must be an integer in \[0, 1\] for N=2; got 3"):
        parse_shard("3/2")
    with pytest.raises(ValueError, match="shard must look like i/N"):
        parse_shard("1-2")


def test_save_load_roundtrip_and_validation(tmp_path):
    plan = make_plan(descs(12), 1, sweeps=["unit"], gpu="h200_sxm")
    path = save_plan(plan, tmp_path / "p.jsonl")
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["seed"] == 1 and header["count"] == 14 == len(lines) - 1 and header["sweeps"] == ["unit"]
    assert json.loads(lines[13]) == plan.entries[12].to_dict()
    loaded = load_plan(path)
    assert loaded.entries == plan.entries and loaded.plan_id() == plan.plan_id()
    bad = json.loads(lines[14])
    bad["repeat_of"] = 13
    path.write_text("\n".join(lines[:14] + [json.dumps(bad)]) + "\n")
    with pytest.raises(ValueError, match=r"p.jsonl:15: repeat_of must be null or an earlier index; got 13"):
        load_plan(path)


def test_cli_rejects_bad_shard_naming_the_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["collect", "run", "--plan", "p.jsonl", "--shard", "3/2", "--out", "o"])
    assert exc.value.code == 2
    assert "argument --shard: shard index i must be an integer in [0, 1] for N=2; got 3" in capsys.readouterr().err


def test_cli_status_json(tmp_path, capsys):
    path = save_plan(make_plan(descs(10), 0), tmp_path / "p.jsonl")
    assert cli.main(["collect", "status", "--plan", str(path), "--out", str(tmp_path / "out"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["entries"] == 11 and out["missing"] == 11 and out["done"] == 0 and out["files"] == []


def test_cli_plan_from_a_real_sweep(tmp_path, capsys):
    from kernelcast.collect.sweeps import expand

    out = tmp_path / "smoke.jsonl"
    assert (
        cli.main(["collect", "plan", "--sweep", "smoke", "--gpu", "H200", "--seed", "3", "--out", str(out), "--json"])
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    plan = load_plan(out)
    originals = {d.key() for d in expand("smoke", "H200", 3)}
    assert {e.desc.key() for e in plan.entries} == originals
    assert result["count"] == len(plan.entries) == len(originals) + result["repeats"]
    assert plan.header["gpu"] == "h200_sxm" and plan.header["sweeps"] == ["smoke"]


@pytest.mark.parametrize(
    "flag,value,message",
    [
        ("--timeout", "nan", "argument --timeout: must be a finite number >= 0 (seconds); got 'nan'"),
        ("--timeout", "inf", "argument --timeout: must be a finite number >= 0 (seconds); got 'inf'"),
        ("--timeout", "0", "argument --timeout: must be a finite number > 0 (seconds); got '0'"),
        ("--timeout", str(2**1024), "argument --timeout: must be a finite number >= 0 (seconds); got '1797693"),
        ("--budget-s", "-1", "argument --budget-s: must be a finite number >= 0 (seconds); got '-1'"),
        ("--limit", str(2**1024), "argument --limit: must be an integer in [1, 1000000000]; got '1797693"),
        ("--chunk", "0", "argument --chunk: must be an integer in [1, 1000000000]; got '0'"),
        ("--timer", "gpu", "argument --timer: invalid choice: 'gpu'"),
    ],
)
def test_cli_run_flags_out_of_range_are_one_line_errors(flag, value, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["collect", "run", "--plan", "p.jsonl", "--out", "o", flag, value])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err and "Traceback" not in err and len(err) < 2000


def test_cli_missing_plan_and_tags_files_are_one_line_errors(tmp_path, capsys):
    assert cli.main(["collect", "run", "--plan", str(tmp_path / "none.jsonl"), "--out", str(tmp_path)]) == 2
    assert f"--plan file '{tmp_path / 'none.jsonl'}' does not exist" in capsys.readouterr().err
    assert cli.main(["collect", "status", "--plan", str(tmp_path / "none.jsonl"), "--out", str(tmp_path)]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "in").mkdir()
    assert cli.main(["collect", "merge", "--in", str(tmp_path / "in"), "--tags", str(tmp_path / "t.json")]) == 2
    assert f"--tags file '{tmp_path / 't.json'}' cannot be read: No such file or directory" in capsys.readouterr().err
    (tmp_path / "t.json").write_text("[1, 2")
    assert cli.main(["collect", "merge", "--in", str(tmp_path / "in"), "--tags", str(tmp_path / "t.json")]) == 2
    assert "is not valid JSON" in capsys.readouterr().err


def test_tags_travel_in_the_plan_and_leave_untagged_plans_as_they_were(tmp_path):
    plain = make_plan(descs(6), 0)
    key = plain.entries[0].desc.key()
    tagged = make_plan(descs(6), 0, tags={key: {"model": "qwen2_5_72b", "layer": "attn_qkv"}})
    assert tagged.entries[0].tags == {"model": "qwen2_5_72b", "layer": "attn_qkv"}
    assert [e.tags for e in tagged.entries if e.repeat_of == 0] in ([], [tagged.entries[0].tags])
    assert "tags" not in plain.entries[0].to_dict() and plain.plan_id() != tagged.plan_id()
    assert load_plan(save_plan(tagged, tmp_path / "t.jsonl")).entries == tagged.entries
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    bad = json.loads(lines[1])
    bad["tags"] = ["model"]
    (tmp_path / "t.jsonl").write_text("\n".join([lines[0], json.dumps(bad)] + lines[2:]) + "\n")
    with pytest.raises(ValueError, match=r"t.jsonl:2: tags must be a JSON object; got \['model'\]"):
        load_plan(tmp_path / "t.jsonl")


def test_a_real_model_sweep_plan_carries_model_tags():
    from kernelcast.collect.plan import build_plan

    plan = build_plan(["gemm_cublas"], "H200", 0)
    models = {e.tags.get("model") for e in plan.entries}
    assert "llama3_8b" in models and all(e.tags == plan.entries[e.repeat_of].tags for e in plan.entries if e.repeat_of)
