"""DescribeGroups, ListGroups, DeleteGroups (core), group lookup helpers."""
from __future__ import annotations

import pytest

GROUP = "group-id"


def describe(h, *group_ids, v6=False):
    out = []
    h.gc.describe_groups(out.append, group_ids=list(group_ids), group_id_not_found=v6)
    return out[0]["groups"]


def list_groups(h, states=None, types=None):
    out = []
    h.gc.list_groups(out.append, states_filter=states, types_filter=types)
    return out[0]


def delete(h, *group_ids):
    out = []
    h.gc.delete_groups(out.append, group_ids=list(group_ids))
    return {r["group_id"]: r["error_code"] for r in out[0]["results"]}


def test_describe_stable_group(h, sub):
    a = h.join_new(client_id="ca", client_host="/10.0.0.1", protocols=[("range", sub(["foo"]))])
    b = h.join(instance_id="ib", client_id="cb", client_host="/10.0.0.2", protocols=[("range", sub(["bar"]))])
    h.advance(0)
    ida, idb = a.result["member_id"], b.result["member_id"]
    h.sync(member_id=ida, generation=1, assignments=[(ida, b"A"), (idb, b"B")])
    assert describe(h, GROUP) == [{
        "error_code": 0, "error_message": None, "group_id": GROUP, "group_state": "Stable",
        "protocol_type": "consumer", "protocol_data": "range",
        "members": [
            {"member_id": ida, "group_instance_id": None, "client_id": "ca", "client_host": "/10.0.0.1",
             "member_metadata": sub(["foo"]), "member_assignment": b"A"},
            {"member_id": idb, "group_instance_id": "ib", "client_id": "cb", "client_host": "/10.0.0.2",
             "member_metadata": sub(["bar"]), "member_assignment": b"B"}],
        "authorized_operations": -2147483648}]


def test_describe_rebalancing_group_has_no_protocol_data_but_assignments(h):
    leader, follower = h.stable_group(2)
    h.join_new(client_id="new")
    g, = describe(h, GROUP)
    assert g["group_state"] == "PreparingRebalance" and g["protocol_data"] == ""
    assert [m["member_metadata"] for m in g["members"]] == [b"", b"", b""]
    # J sends the stored assignment in every state (S only when Stable)
    assert [m["member_assignment"] for m in g["members"]] == [f"assignment-{leader}".encode(),
                                                             f"assignment-{follower}".encode(), b""]


def test_describe_completing_rebalance_and_empty(h):
    calls = [h.join_new(client_id=f"c{i}") for i in range(2)]
    h.advance(0)
    assert describe(h, GROUP)[0]["group_state"] == "CompletingRebalance"
    h.leave(GROUP, *({"member_id": c.result["member_id"]} for c in calls))
    g, = describe(h, GROUP)
    assert (g["group_state"], g["protocol_type"], g["protocol_data"], g["members"]) == ("Empty", "consumer", "", [])


def test_describe_missing_group_dead_or_not_found(h):
    assert describe(h, "nope") == [{"error_code": 0, "error_message": None, "group_id": "nope", "group_state": "Dead",
                                    "protocol_type": "", "protocol_data": "", "members": [],
                                    "authorized_operations": -2147483648}]
    g, = describe(h, "nope", v6=True)
    assert (g["error_code"], g["error_message"], g["group_state"]) == (69, "Group nope not found.", "Dead")


def test_describe_simple_group(h):
    h.commit("simple", offsets={("foo", 0): 1})
    g, = describe(h, "simple")
    assert (g["group_state"], g["protocol_type"]) == ("Empty", "")


def test_describe_null_group_id(h):
    g, = describe(h, None)
    assert g["error_code"] == 24 and g["group_id"] == ""


def test_list_groups_and_filters(h):
    h.stable_group(1, group_id="stable")
    h.join_new("preparing", client_id="x")
    h.commit("simple", offsets={("foo", 0): 1})
    res = list_groups(h)
    assert res["error_code"] == 0
    assert res["groups"] == [
        {"group_id": "stable", "protocol_type": "consumer", "group_state": "Stable", "group_type": "classic"},
        {"group_id": "preparing", "protocol_type": "consumer", "group_state": "PreparingRebalance",
         "group_type": "classic"},
        {"group_id": "simple", "protocol_type": "", "group_state": "Empty", "group_type": "classic"}]
    names = lambda r: [g["group_id"] for g in r["groups"]]  # noqa: E731
    assert names(list_groups(h, states=["STABLE"])) == ["stable"]
    assert names(list_groups(h, states=["empty", "preparingrebalance"])) == ["preparing", "simple"]
    assert names(list_groups(h, states=[" Stable "])) == ["stable"]         # Kafka trims
    assert names(list_groups(h, states=[])) == ["stable", "preparing", "simple"]
    assert names(list_groups(h, states=["Dead"])) == []
    assert names(list_groups(h, types=["Classic"])) == ["stable", "preparing", "simple"]
    assert names(list_groups(h, types=["consumer"])) == []
    assert names(list_groups(h, types=["bogus"])) == []
    assert names(list_groups(h, states=["stable"], types=["classic", "consumer"])) == ["stable"]


def test_list_groups_group_filter(h):
    for gid in ("a", "b", "c"):
        h.commit(gid, offsets={("foo", 0): 1})
    out = []
    h.gc.list_groups(out.append, group_filter=lambda g: g != "b")
    assert [g["group_id"] for g in out[0]["groups"]] == ["a", "c"]


def test_delete_groups(h):
    h.stable_group(1, group_id="busy")
    h.commit("idle", offsets={("foo", 0): 1})
    assert delete(h, "busy", "idle", "nope") == {"busy": 68, "idle": 0, "nope": 69}
    assert h.group("idle") is None
    assert h.offsets("idle") == {}
    deleted = h.events_of("group.deleted", "idle")[0]
    assert (deleted["reason"], deleted["offsets"], deleted["state"]) == ("delete_groups", 1, "Dead")
    change = h.events_of("group.state_change", "idle")[-1]
    assert (change["state_from"], change["state_to"]) == ("Empty", "Dead")
    assert delete(h, "idle") == {"idle": 69}


@pytest.mark.parametrize("state", ["PreparingRebalance", "CompletingRebalance", "Stable"])
def test_delete_non_empty_group(h, state):
    leader, = h.stable_group(1)
    if state == "PreparingRebalance":
        h.join_new(client_id="x")
    elif state == "CompletingRebalance":
        h.join(member_id=leader)
    assert h.state() == state
    assert delete(h, GROUP) == {GROUP: 68}


def test_deleted_group_can_be_recreated(h):
    leader, = h.stable_group(1)
    h.leave(GROUP, {"member_id": leader})
    assert delete(h, GROUP) == {GROUP: 0}
    call = h.join(version=3)
    h.advance(0)
    assert call.result["generation_id"] == 1


def test_delete_null_group_id(h):
    out = []
    h.gc.delete_groups(out.append, group_ids=[None])
    assert out[0]["results"] == [{"group_id": None, "error_code": 24}]


def test_group_lookup_helpers(h):
    h.stable_group(1, group_id="a")
    h.commit("b", offsets={("foo", 0): 1})
    assert [g.group_id for g in h.gc.groups()] == ["a", "b"]
    assert h.gc.group("a").state == "Stable" and h.gc.group("zzz") is None
    assert "a" in h.gc and len(h.gc) == 2
