"""RegistryState: what each _schemas record does to the registry's state."""

from __future__ import annotations

from kproto.registry.records import (
    ClearSubjectKey,
    ClearSubjectValue,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    ModeKey,
    ModeValue,
    NoopKey,
    SchemaKey,
    SchemaValue,
    encode_key,
    encode_value,
)
from kproto.registry.schemas import SchemaReference
from kproto.registry.store import RegistryState, StoredSchema


def put(
    state: RegistryState,
    subject: str,
    version: int,
    schema_id: int,
    text: str,
    **kw: object,
) -> None:
    state.apply(SchemaKey(subject, version), SchemaValue(subject, version, schema_id, text, **kw))  # type: ignore[arg-type]


def test_same_schema_two_subjects_one_id() -> None:
    state = RegistryState()
    put(state, "a", 1, 1, '"int"')
    put(state, "b", 1, 1, '"int"')
    assert state.ids[StoredSchema("AVRO", '"int"')] == 1
    assert [(e.subject, e.version) for e in state.version_uses(1)] == [
        ("a", 1),
        ("b", 1),
    ]
    state.apply(SchemaKey("a", 1), None)
    assert 1 in state.schemas  # b still has it
    state.apply(SchemaKey("b", 1), None)
    assert 1 not in state.schemas and not state.subjects
    assert state.max_id == 1  # never reused


def test_delete_subject_marks_up_to_its_version() -> None:
    state = RegistryState()
    for v in (1, 2, 3):
        put(state, "s", v, v, f'{{"type":"fixed","name":"F","size":{v}}}')
    state.apply(DeleteSubjectKey("s"), DeleteSubjectValue("s", 2))
    assert [e.version for e in state.versions("s")] == [3]
    assert [e.version for e in state.versions("s", deleted=True)] == [1, 2, 3]


def test_clear_subject_drops_its_versions() -> None:
    state = RegistryState()
    put(state, "s", 1, 7, '"int"')
    state.apply(ClearSubjectKey("s"), ClearSubjectValue("s"))
    assert "s" not in state.subjects and 7 not in state.schemas


def test_versions_stay_sorted_when_imported_out_of_order() -> None:
    state = RegistryState()
    put(state, "s", 5, 50, '"long"')
    put(state, "s", 2, 20, '"int"')
    assert [e.version for e in state.versions("s")] == [2, 5]


def test_rewritten_version_moves_to_the_new_id() -> None:
    state = RegistryState()
    put(state, "s", 1, 1, '"int"')
    put(state, "s", 1, 2, '"long"')
    assert state.subjects["s"][1].schema_id == 2
    assert 1 not in state.schemas and state.version_uses(2)[0].version == 1


def test_soft_delete_then_undelete_by_record() -> None:
    state = RegistryState()
    put(state, "s", 1, 1, '"int"')
    put(state, "s", 1, 1, '"int"', deleted=True)
    assert state.versions("s") == []
    put(state, "s", 1, 1, '"int"')
    assert [e.version for e in state.versions("s")] == [1]


def test_references_and_referrers() -> None:
    state = RegistryState()
    put(state, "base", 1, 1, '"int"')
    ref = SchemaReference("Base", "base", 1)
    put(
        state,
        "user",
        1,
        2,
        '{"type":"record","name":"U","fields":[]}',
        references=(ref,),
    )
    assert state.referenced_by("base", 1) == [2]
    put(
        state,
        "user",
        1,
        2,
        '{"type":"record","name":"U","fields":[]}',
        references=(ref,),
        deleted=True,
    )
    assert state.referenced_by("base", 1) == []  # only live referrers count
    state.apply(SchemaKey("user", 1), None)
    assert state.referenced_by("base", 1) == []


def test_configs_modes_and_tombstones() -> None:
    state = RegistryState()
    state.apply(ConfigKey(None), ConfigValue(None, "FULL"))
    state.apply(ConfigKey("s"), ConfigValue("s", "NONE"))
    state.apply(ModeKey("s"), ModeValue("s", "IMPORT"))
    assert state.configs == {None: "FULL", "s": "NONE"} and state.modes == {
        "s": "IMPORT"
    }
    state.apply(ConfigKey("s"), None)
    state.apply(ModeKey("s"), None)
    state.apply(NoopKey(), None)
    assert state.configs == {None: "FULL"} and state.modes == {}


def test_replay_skips_what_does_not_decode() -> None:
    state = RegistryState()
    good = SchemaValue("s", 1, 3, '"int"')
    skipped = state.replay(
        [
            (b"garbage", b"{}"),
            (None, b"{}"),
            (b'{"keytype":"CONTEXT","magic":0}', b"{}"),
            (encode_key(SchemaKey("s", 1)), b'{"subject":"s"}'),
            (encode_key(SchemaKey("s", 1)), encode_value(good)),
        ]
    )
    assert skipped == 4
    assert state.schemas == {3: StoredSchema("AVRO", '"int"')}


def test_guid_is_stable_and_indexed() -> None:
    state = RegistryState()
    put(state, "s", 1, 1, '"int"')
    guid = state.schemas[1].guid
    assert guid == StoredSchema("AVRO", '"int"').guid
    assert guid != StoredSchema("JSON", '"int"').guid
    assert state.by_guid(guid) == 1
    state.apply(SchemaKey("s", 1), None)
    assert state.by_guid(guid) is None  # the index follows changes
