"""The generator: parser, model, naming, rendering, and drift of the committed output."""

from __future__ import annotations

import doctest
import subprocess
import sys
from pathlib import Path

import pytest

from codegen import emit, model, naming, parser, sources

FIXTURE = Path(__file__).parent / "fixtures" / "FeatureDenseRequest.json"
ROOT = Path(__file__).resolve().parents[2]


def test_naming_doctests() -> None:
    failures, tried = doctest.testmod(naming)
    assert tried >= 8 and failures == 0


def test_strip_comments_keeps_slashes_in_strings() -> None:
    assert parser.strip_comments('{"a": "x//y"} // c') == '{"a": "x//y"} '
    assert parser.strip_comments('{"a": "\\"/*"} /* c */') == '{"a": "\\"/*"} '


def test_parser_rejects_unknown_keys() -> None:
    with pytest.raises(
        parser.ParseError, match=r"fields\[0\]: unknown key\(s\) nullable"
    ):
        parser.parse_text(
            '{"name": "X", "type": "data", "validVersions": "0", "fields": ['
            '{"name": "A", "type": "int8", "versions": "0+", "nullable": true}]}',
            "X.json",
        )


def test_parser_reports_bad_json_with_file() -> None:
    with pytest.raises(parser.ParseError, match="Broken.json"):
        parser.parse_text("{ not json", "Broken.json")


def test_versions() -> None:
    v = model.Versions.parse("3+")
    assert 3 in v and 99 in v and 2 not in v and str(v) == "3+"
    assert model.Versions.parse("none").empty
    assert str(model.Versions.parse("0-2")) == "0-2"
    with pytest.raises(model.ModelError):
        model.Versions.parse("x")


@pytest.fixture(scope="module")
def spec() -> model.MessageSpec:
    return model.MessageSpec.from_json(
        parser.parse_file(FIXTURE), "test/FeatureDenseRequest.json"
    )


def test_model_per_version_views(spec: model.MessageSpec) -> None:
    v0 = {c.name: c for c in spec.at(0)}
    assert list(v0) == ["TopicData", "FeatureDenseRequest"]  # nested first
    top0 = v0["FeatureDenseRequest"]
    assert [f.py_name for f in top0.fields] == ["timeout_ms", "topics"]
    assert top0.fields[0].default == 0x7FFFFFFF
    assert not top0.fields[1].nullable and top0.fields[1].default == ()
    top1 = {c.name: c for c in spec.at(1)}["FeatureDenseRequest"]
    assert top1.fields[1].py_name == "global_" and top1.fields[1].default is True
    assert top1.fields[2].nullable and top1.fields[2].default is None
    v2 = {c.name: c for c in spec.at(2)}
    top2 = v2["FeatureDenseRequest"]
    tagged = {f.py_name: f for f in top2.fields if f.tag is not None}
    assert tagged["leader"].tag == 0 and tagged["leader"].default == "STRUCT"
    assert tagged["only_tagged"].tag == 1 and tagged["only_tagged"].default == -1
    assert top2.flexible and all(f.compact for f in top2.fields)
    assert [f.py_name for f in v2["TopicData"].fields] == ["isr_nodes", "topic_id"]
    with pytest.raises(model.ModelError, match="no version 3"):
        spec.at(3)


def test_model_rejects_broken_rules() -> None:
    bad_tag = {"name": "A", "type": "int8", "versions": "0+", "tag": 1}
    with pytest.raises(model.ModelError, match="go together"):
        model.FieldSpec.from_json(bad_tag, "X")
    bad_default = {"name": "A", "type": "int8", "versions": "0+", "default": "300"}
    field = model.FieldSpec.from_json(bad_default, "X")
    with pytest.raises(model.ModelError, match="does not fit int8"):
        model.FieldView.build(
            model.MessageSpec.from_json(
                {
                    "name": "X",
                    "type": "data",
                    "validVersions": "0",
                    "fields": [bad_default],
                },
                "X",
            ),
            field,
            0,
            False,
            None,
        )


def _render(request: model.MessageSpec) -> dict[str, str]:
    """``request`` (versions 0-2) with an empty FeatureDenseResponse (api key 9999)
    and a one-code error table, rendered to files."""
    response = model.MessageSpec.from_json(
        {
            "apiKey": 9999,
            "type": "response",
            "name": "FeatureDenseResponse",
            "validVersions": "0-2",
            "flexibleVersions": "2+",
            "fields": [],
        },
        "test/FeatureDenseResponse.json",
    )
    merged = {
        spec.name: sources.Merged(
            spec.name, spec.type, spec.api_key, {v: spec for v in range(3)}
        )
        for spec in (request, response)
    }
    errors = {
        "source": "test",
        "errors": [
            {
                "code": 0,
                "name": "NONE",
                "retriable": False,
                "exception": None,
                "message": None,
            }
        ],
    }
    return emit.render(merged, errors, jobs=1)


def test_rendered_module_compiles_and_carries_metadata(
    spec: model.MessageSpec, tmp_path: Path
) -> None:
    files = _render(spec)
    text = files["schema/feature_dense/v2/request.py"]
    assert text.startswith(
        "# Generated by kproto's codegen from test/FeatureDenseRequest.json"
    )
    assert "Do not edit." in text.splitlines()[0]
    compile(text, "v2.py", "exec")
    assert "global_: bool = attrs.field(" in files["schema/feature_dense/v1/request.py"]
    assert "from kproto.schema.request_header.v2 import RequestHeader" in text
    assert "class ApiKey(enum.IntEnum)" in files["index.py"]
    assert "FEATURE_DENSE = 9999" in files["index.py"]


def test_committed_code_matches_a_fresh_generation() -> None:
    """`make build-schema` reproduces the committed generated code exactly."""
    if (
        not (ROOT.parent / "shared" / "kafka-schema").is_dir()
        and not sources.LOCK_FILE.exists()
    ):
        pytest.skip("no schema inputs beside the checkout")
    result = subprocess.run(
        [sys.executable, "-m", "codegen", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_lock_mismatch_stops_the_build(tmp_path: Path) -> None:
    lock = sources.Lock(sources=[], files={"a.json": "0" * 64})
    (tmp_path / "a.json").write_text("{}")
    with pytest.raises(sources.SourceError, match="sha256 mismatch: a.json"):
        sources.verify(tmp_path, lock)
    with pytest.raises(sources.SourceError, match="missing: a.json"):
        sources.verify(tmp_path / "nothing", lock)


def _render_soft_keyword_fixture() -> dict[str, str]:
    """The fixture plus fields named like soft keywords, rendered to files."""
    fixture = parser.parse_file(FIXTURE)
    fixture["fields"] = [
        *fixture["fields"],
        *(
            {"name": name, "type": "int8", "versions": "0+", "about": "Soft."}
            for name in ("Match", "Case", "Type")
        ),
    ]
    return _render(
        model.MessageSpec.from_json(fixture, "test/FeatureDenseRequest.json")
    )


def test_generation_does_not_depend_on_soft_keywords(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Python 3.12 made ``type`` a soft keyword: the tree must not change with it."""
    import keyword

    baseline = _render_soft_keyword_fixture()
    emit.write(baseline, tmp_path)
    request = baseline["schema/feature_dense/v1/request.py"]
    assert "global_: bool" in request  # hard keywords are still suffixed
    for name in ("match", "case", "type"):
        assert f"    {name}: int = attrs.field(" in request
    soft = [*keyword.softkwlist, "type", "global"]
    monkeypatch.setattr(keyword, "softkwlist", soft)
    monkeypatch.setattr(keyword, "issoftkeyword", frozenset(soft).__contains__)
    assert emit.check(_render_soft_keyword_fixture(), tmp_path) == []


def test_model_rejects_an_unknown_message_type() -> None:
    with pytest.raises(model.ModelError, match="unknown message type 'cache'"):
        model.MessageSpec.from_json(
            {"name": "X", "type": "cache", "validVersions": "0", "fields": []}, "X"
        )


def test_coordinator_key_is_renumbered_to_its_record_type() -> None:
    """Kafka 4.1+ writes GroupMetadataKey as version 0 with apiKey 2; kproto keeps
    the 2024 numbering, where the key's version is the int16 record-type prefix."""
    spec = model.MessageSpec.from_json(
        parser.parse_text(
            '{"apiKey": 2, "type": "coordinator-key", "name": "GroupMetadataKey",'
            ' "validVersions": "0", "flexibleVersions": "none",'
            ' "fields": [{"name": "group", "type": "string", "versions": "0"},'
            '            {"name": "x", "type": "int8", "versions": "0+"}]}'
        ),
        "t/GroupMetadataKey.json",
    )
    assert str(spec.valid_versions) == "2"
    assert [str(f.versions) for f in spec.fields] == ["2", "2+"]
    assert [f.py_name for f in spec.at(2)[0].fields] == ["group", "x"]
    with pytest.raises(model.ModelError, match="no version 0"):
        spec.at(0)
    with pytest.raises(model.ModelError, match="coordinator-key needs"):
        model.MessageSpec.from_json(
            {"name": "K", "type": "coordinator-key", "validVersions": "0-1"}, "K"
        )


def test_unstable_versions_are_marked_and_excluded_from_the_stable_range(
    tmp_path: Path,
) -> None:
    def api(kind: str) -> model.MessageSpec:
        return model.MessageSpec.from_json(
            {
                "apiKey": 9998,
                "type": kind,
                "name": f"Probe{kind.title()}",
                "validVersions": "0-2",
                "flexibleVersions": "none",
                **({"latestVersionUnstable": True} if kind == "request" else {}),
                "fields": [],
            },
            f"t/Probe{kind.title()}.json",
        )

    req, resp = api("request"), api("response")
    assert req.unstable_versions == {2} and resp.unstable_versions == frozenset()
    messages = {
        s.name: sources.Merged(s.name, s.type, 9998, {v: s for v in range(3)})
        for s in (req, resp)
    }
    files = emit.render_unformatted(
        messages,
        {
            "errors": [
                {
                    "code": 0,
                    "name": "NONE",
                    "retriable": False,
                    "message": None,
                    "exception": None,
                }
            ]
        },
    )
    for kind in ("request", "response"):
        assert (
            "__unstable__: ClassVar[bool] = True" in files[f"schema/probe/v2/{kind}.py"]
        )
        assert "unstable=True" in files[f"schema/probe/v2/{kind}.py"]
        assert (
            "__unstable__: ClassVar[bool] = False"
            in files[f"schema/probe/v1/{kind}.py"]
        )
    assert "9998: (0, 1)," in files["index.py"]  # the _STABLE table


def test_api_key_ranges_text() -> None:
    assert emit._ranges_text([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
    assert emit._ranges_text([]) == ""
