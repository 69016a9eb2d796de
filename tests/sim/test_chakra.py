"""Chakra execution traces: the hand-written protobuf wire format, write -> read of a DDP step
and of a TP x PP timeline, dependencies, and bad traces refused."""

from __future__ import annotations

import pytest

from sim.chakra import (
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    decode_nodes,
    encode_node,
    encode_nodes,
    from_ddp_events,
    read_traces,
    rows_to_nodes,
    write_traces,
)
from sim.errors import CollsimError
from sim.training.ddp import run_ddp
from sim.training.ddp_scenario import DDPScenario


def ddp_rows(world_size: int = 4) -> list[dict]:
    scenario = DDPScenario.from_dict({"param_bytes": [2**20] * 4, "strategy": "bucketed", "bucket_size": "2MiB",
                                      "backward_time": "10ms", "comm": "ow", "o": "50us", "w": "10GB/s", "ranks": world_size})  # fmt: skip
    return from_ddp_events(run_ddp(scenario).events(), world_size)


def row(rank, stream, kind, name, start, end, nbytes=0, peer=-1, group=()):
    return {
        "rank": rank,
        "stream": stream,
        "kind": kind,
        "name": name,
        "start_s": start,
        "end_s": end,
        "bytes": nbytes,
        "peer": peer,
        "group": list(group),
    }


# tp 2 x pp 2: ranks 0,1 are stage 0, ranks 2,3 stage 1; times in whole microseconds
PIPELINE = [
    *(row(r, "compute", "compute", "fwd mb0", 0.0, 0.001) for r in range(2)),
    *(row(r, "tp", "all_reduce", "fwd mb0 L0.mlp", 0.001, 0.0015, 512, group=(0, 1)) for r in range(2)),
    *(row(r, "pp", "send", "fwd mb0 stage0->1", 0.0015, 0.002, 512, peer=r + 2) for r in range(2)),
    *(row(r, "pp", "recv", "fwd mb0 stage0->1", 0.0, 0.002, 512, peer=r - 2) for r in range(2, 4)),
    *(row(r, "compute", "compute", "fwd mb0", 0.002, 0.003) for r in range(2, 4)),
    *(row(r, "tp", "all_reduce", "fwd mb0 L1.mlp", 0.003, 0.0034, 512, group=(2, 3)) for r in range(2, 4)),
]


def test_a_node_is_encoded_as_protobuf_writes_it():
    # id 1, name "a", type COMP_NODE, duration 300 us (varint 0xac 0x02), one bool attribute (a oneof: written although False)
    node = {"id": 1, "name": "a", "type": COMP_NODE, "start_time_micros": 0, "duration_micros": 300, "attr": {"is_cpu_op": False}}
    attribute = b"\x0a\x09is_cpu_op" + b"\xd8\x01\x00"  # name (field 1), bool_val (field 27, varint 0)
    assert encode_node(node) == b"\x08\x01\x12\x01a\x18\x04\x38\xac\x02" + b"\x52" + bytes([len(attribute)]) + attribute
    # a file: GlobalMetadata {version: "0.0.4"} then the node, each preceded by its size
    assert encode_nodes([node]).startswith(b"\x07\x0a\x050.0.4")


def test_ddp_step_written_and_read_back_is_the_same_workload(tmp_path):
    rows = ddp_rows()
    paths = write_traces(rows, tmp_path / "ddp")
    assert [p.name for p in paths] == [f"ddp.{r}.et" for r in range(4)] + ["ddp.comm_groups.json"]
    back = read_traces(tmp_path / "ddp")
    rounded = [dict(r, start_s=round(r["start_s"] * 1e6) / 1e6, end_s=round(r["end_s"] * 1e6) / 1e6) for r in rows]
    key = lambda r: (r["rank"], r["start_s"], r["end_s"], r["name"])  # noqa: E731
    assert [{**r, "end_s": pytest.approx(r["end_s"], abs=1e-9)} for r in sorted(rounded, key=key)] == sorted(back, key=key)
    write_traces(back, tmp_path / "again")
    assert all((tmp_path / f"again.{r}.et").read_bytes() == (tmp_path / f"ddp.{r}.et").read_bytes() for r in range(4))
    _, nodes = decode_nodes((tmp_path / "ddp.0.et").read_bytes())
    colls = [n for n in nodes if n["type"] == COMM_COLL_NODE]
    assert colls and all(n["attr"]["comm_type"] == 0 and n["attr"]["pg_name"] == "1" for n in colls)
    assert [n["attr"]["comm_size"] for n in colls] == [r["bytes"] for r in rows if r["rank"] == 0 and r["kind"] == "all_reduce"]


def test_pipeline_sends_match_recvs_by_tag_and_groups_are_numbered(tmp_path):
    nodes = rows_to_nodes(PIPELINE)
    send = next(n for n in nodes[0] if n["type"] == COMM_SEND_NODE)
    recv = next(n for n in nodes[2] if n["type"] == COMM_RECV_NODE)
    assert (send["attr"]["comm_src"], send["attr"]["comm_dst"], send["attr"]["comm_tag"]) == (0, 2, 0)
    assert (recv["attr"]["comm_src"], recv["attr"]["comm_dst"], recv["attr"]["comm_tag"]) == (0, 2, 0)
    write_traces(PIPELINE, tmp_path / "pp")
    assert (tmp_path / "pp.comm_groups.json").read_text().split() == ["{", '"1":', "[", "0,", "1", "],", '"2":', "[", "2,", "3", "]", "}"]
    back = read_traces(tmp_path / "pp")
    assert sorted((r["rank"], r["kind"], r["peer"], tuple(r["group"]), r["bytes"]) for r in back) == sorted(
        (r["rank"], r["kind"], r["peer"], tuple(r["group"]), r["bytes"]) for r in PIPELINE
    )


def test_each_node_depends_on_its_stream_and_on_what_ended_before_it_started():
    nodes = {n["name"]: n for n in rows_to_nodes(PIPELINE)[2]}
    # rank 2: recv (0-2 ms, pp) -> compute (2-3 ms) -> all-reduce (3-3.4 ms)
    assert nodes["fwd mb0"]["data_deps"] == [nodes["fwd mb0 stage0->1"]["id"]]
    assert nodes["fwd mb0 L1.mlp"]["data_deps"] == sorted([nodes["fwd mb0"]["id"], nodes["fwd mb0 stage0->1"]["id"]])
    assert nodes["fwd mb0 stage0->1"]["data_deps"] == []


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([row(0, "x", "matmul", "a", 0, 1)], "kind 'matmul'; allowed: compute, all_reduce"),
        ([row(0, "pp", "send", "a", 0, 1, 8)], "send without a peer rank"),
        ([row(0, "c", "compute", "a", 2, 1)], "0 <= start_s <= end_s"),
        ([{"rank": 0, "kind": "compute"}], "lacks start_s, end_s"),
    ],
)
def test_bad_rows_are_refused(tmp_path, rows, message):
    with pytest.raises(CollsimError, match=message):
        write_traces(rows, tmp_path / "bad")


def test_bad_traces_are_refused(tmp_path):
    with pytest.raises(CollsimError, match="no trace .*nothing.0.et"):
        read_traces(tmp_path / "nothing")
    (tmp_path / "cut.0.et").write_bytes(encode_nodes([{"id": 1, "name": "a", "type": COMP_NODE, "start_time_micros": 0,
                                                       "duration_micros": 5, "attr": {}}])[:-2])  # fmt: skip
    with pytest.raises(CollsimError, match="runs past the end"):
        read_traces(tmp_path / "cut")


def test_random_bytes_are_refused_in_one_message_or_read():
    import random

    generator = random.Random(7)
    valid = encode_nodes(rows_to_nodes(PIPELINE)[0])
    for trial in range(300):
        data = bytearray(valid)
        for _ in range(1 + trial % 5):  # flip a few bytes of a valid trace
            data[generator.randrange(len(data))] = generator.randrange(256)
        try:
            decode_nodes(bytes(data))
        except CollsimError:
            pass


def test_protobuf_runtime_reads_what_we_write(tmp_path):
    """The official protobuf runtime, given et_def.proto's Node and AttributeProto, parses our bytes."""
    pytest.importorskip("google.protobuf")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="et_def_subset.proto", package="ChakraProtoMsg", syntax="proto3")
    attr = file.message_type.add(name="AttributeProto")
    attr.oneof_decl.add(name="value")
    for name, number, kind in (("name", 1, F.TYPE_STRING), ("int32_val", 7, F.TYPE_INT32), ("int64_val", 9, F.TYPE_INT64),
                               ("uint64_val", 13, F.TYPE_UINT64), ("bool_val", 27, F.TYPE_BOOL), ("string_val", 29, F.TYPE_STRING)):  # fmt: skip
        field = attr.field.add(name=name, number=number, type=kind, label=F.LABEL_OPTIONAL)
        if number != 1:
            field.oneof_index = 0
    node = file.message_type.add(name="Node")
    for name, number, kind, label in (("id", 1, F.TYPE_UINT64, F.LABEL_OPTIONAL), ("name", 2, F.TYPE_STRING, F.LABEL_OPTIONAL),
                                      ("type", 3, F.TYPE_INT32, F.LABEL_OPTIONAL), ("ctrl_deps", 4, F.TYPE_UINT64, F.LABEL_REPEATED),
                                      ("data_deps", 5, F.TYPE_UINT64, F.LABEL_REPEATED), ("start_time_micros", 6, F.TYPE_UINT64, F.LABEL_OPTIONAL),
                                      ("duration_micros", 7, F.TYPE_UINT64, F.LABEL_OPTIONAL)):  # fmt: skip
        node.field.add(name=name, number=number, type=kind, label=label)
    node.field.add(name="attr", number=10, type=F.TYPE_MESSAGE, type_name=".ChakraProtoMsg.AttributeProto", label=F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    Node = message_factory.GetMessageClass(pool.FindMessageTypeByName("ChakraProtoMsg.Node"))
    for ours in rows_to_nodes(PIPELINE + ddp_rows(2))[1]:
        parsed = Node.FromString(encode_node(ours))
        assert (parsed.id, parsed.name, parsed.type, list(parsed.data_deps), parsed.duration_micros) == (
            ours["id"], ours["name"], ours["type"], ours["data_deps"], ours["duration_micros"])  # fmt: skip
        values = {a.name: getattr(a, a.WhichOneof("value")) for a in parsed.attr}
        assert values == ours["attr"]
        assert parsed.SerializeToString() == encode_node(ours)  # byte for byte what protobuf writes
