"""Docs packs: format, selection by signals, hints, and the installed packs."""

from __future__ import annotations

import pytest

from kevolve.knowledge import KnowledgeBase, Signals, parse_passage
from kevolve.plugins import get_manager
from kevolve.registry import DocsRegistry
from kevolve.synthesis.schedule import Param, ScheduleSpace


def doc(meta: str, text: str = "body") -> str:
    return f"+++\n{meta}\n+++\n{text}\n"


def registry(tmp_path, files: dict[str, str]) -> KnowledgeBase:
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    reg = DocsRegistry()
    reg.add_pack("t", tmp_path)
    return reg.knowledge


def test_front_matter_is_required_and_checked():
    with pytest.raises(ValueError, match="front matter"):
        parse_passage("p", "a.md", "no front matter")
    with pytest.raises(ValueError, match="category"):
        parse_passage("p", "a.md", doc('category = "gossip"'))


def test_selection_never_leaks_target_specific_passages(tmp_path):
    reg = registry(tmp_path, {
        "cpu.md": doc('title = "cpu"\ncategory = "hardware"\ntargets = ["cpu"]'),
        "gpu.md": doc('title = "gpu"\ncategory = "hardware"\ntargets = ["gpu"]'),
        "all.md": doc('title = "all"\ncategory = "guidance"'),
        "mem.md": doc('title = "mem"\ncategory = "guidance"\ndiagnoses = ["memory-bound"]'),
    })
    titles = [p.title for p in reg.retrieve(Signals(target="cpu"))]
    assert titles == ["cpu", "all"]
    titles = [p.title for p in reg.retrieve(Signals(target="cpu", diagnosis="memory-bound"))]
    assert titles[0] in ("cpu", "mem") and "gpu" not in titles and "mem" in titles


def test_hints_prefer_specific_passages_and_skip_conflicts(tmp_path):
    reg = registry(tmp_path, {
        "general.md": doc('category = "guidance"\n[hints]\nblock = 64\nsimd = "omp"'),
        "specific.md": doc('category = "hardware"\ntargets = ["cpu"]\nfamilies = ["pointwise"]\n[hints]\nblock = 256'),
    })
    hints = reg.hints(Signals(target="cpu", family="pointwise"))
    assert hints == {"block": 256, "simd": "omp"}
    space = ScheduleSpace([Param("block", (64, 256)), Param("simd", ("none", "omp")), Param("unroll", (1, 4))],
                          valid=lambda p: not (p["simd"] == "omp" and p["unroll"] > 1))
    assert space.prefer({"block": 256, "simd": "omp", "unroll": 4}) == {"block": 256, "simd": "omp", "unroll": 1}


def test_installed_packs_load_cleanly_and_cover_three_categories():
    manager = get_manager()
    assert manager.docs.errors == []
    assert {"core", "cpu"} <= set(manager.docs.packs)
    docs = manager.knowledge
    assert {p.category for p in docs.passages} == {"correctness", "guidance", "hardware"}
    cpu = docs.retrieve(Signals(target="cpu", language="cpp", family="row_softmax", diagnosis="compute-bound"))
    assert any(p.pack == "cpu" for p in cpu) and any(p.pack == "core" for p in cpu)
    hints = docs.hints(Signals(target="cpu", language="cpp", family="pointwise"))
    assert hints.get("math") == "poly"


def test_docs_search_shows_what_would_be_retrieved_and_why(capsys):
    import json

    from kevolve.cli import main

    assert main(["docs", "search", "expf vectorize", "--target", "cpu", "--language", "cpp", "--family",
                 "row_softmax", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["contract"] == ["cpu/cpp/kernel_abi.md"]
    first = report["hits"][0]
    assert first["path"] == "cpp/math.md" and first["matched_tags"] == ["cpu", "cpp", "row_softmax"]
    assert first["bm25"] == 1.0 and {"expf", "vectorize"} <= set(first["matched_words"])
    assert all(h["pack"] in ("core", "cpu") for h in report["hits"])  # no other target's passages
    assert [h["score"] for h in report["hits"]] == sorted((h["score"] for h in report["hits"]), reverse=True)
    assert main(["docs", "search", "bank conflicts", "--target", "nosuchchip"]) == 2


def test_a_docs_pack_can_be_left_out_to_measure_what_it_is_worth(monkeypatch):
    from kevolve.plugins import build_manager

    monkeypatch.setenv("KEVOLVE_DISABLE_DOCS_PACKS", "cpu, nosuchpack")
    manager = build_manager()
    assert "cpu" not in manager.docs.packs and manager.docs.disabled == ["cpu"] and "core" in manager.docs.packs
    assert not any(p.pack == "cpu" for p in manager.knowledge.passages)
