"""The legacy attach flow as Nova's `nova.volume.cinder` drives it, through the real
python-cinderclient volumes manager (reserve, initialize_connection, attach,
begin_detaching, terminate_connection, detach, unreserve), and how it mixes with the
attachments API on a shared volume."""

import uuid

import pytest
from cinderclient import client as cinder_client
from cinderclient import exceptions
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

CONNECTOR = {
    "host": "cmp-1",
    "initiator": "iqn.2004-10.com.ubuntu:01:abc",
    "ip": "10.0.0.5",
    "platform": "x86_64",
    "os_type": "linux",
    "multipath": False,
}


def other_host(name):
    return dict(CONNECTOR, host=name, initiator=f"iqn.2004-10.com.ubuntu:01:{name}")


@pytest.fixture
def client(schema_proxy):
    """cinderclient at 3.71 as Nova builds it: a keystoneauth session (token auth)."""
    auth = token_endpoint.Token(f"{schema_proxy.url}/v3/p1", "admin:p1")
    return cinder_client.Client("3.71", session=ks_session.Session(auth=auth))


def status(client, volume):
    return client.volumes.get(volume.id).status


def test_nova_attaches_and_detaches_the_legacy_way(client):
    volume = client.volumes.create(1, name="legacy")
    instance = str(uuid.uuid4())

    client.volumes.reserve(volume)
    assert status(client, volume) == "attaching"
    info = client.volumes.initialize_connection(volume, CONNECTOR)
    assert info["driver_volume_type"] == "local"
    assert info["data"]["access_mode"] == "rw"
    assert info["data"]["qos_specs"] is None
    client.volumes.attach(volume, instance, "/dev/vdb", mode=info["data"]["access_mode"])
    shown = client.volumes.get(volume.id)
    assert shown.status == "in-use"
    assert shown.attachments[0]["server_id"] == instance
    attachment_id = shown.attachments[0]["attachment_id"]
    assert attachment_id == info["data"]["attachment_id"]
    # The attachments API sees the same attachment.
    listed = client.attachments.list(search_opts={"volume_id": volume.id})
    assert [a.id for a in listed] == [attachment_id]

    client.volumes.begin_detaching(volume)
    assert status(client, volume) == "detaching"
    client.volumes.terminate_connection(volume, CONNECTOR)
    client.volumes.detach(volume, attachment_id)
    assert status(client, volume) == "available"
    assert client.attachments.list(search_opts={"volume_id": volume.id}) == []

    # An attach that fails after the reservation is rolled back by Nova with unreserve.
    client.volumes.reserve(volume)
    client.volumes.unreserve(volume)
    assert status(client, volume) == "available"
    client.volumes.delete(volume)


def test_legacy_and_new_attachments_share_a_volume(client):
    volume_type = client.volume_types.create("shared-legacy")
    volume_type.set_keys({"multiattach": "<is> True"})
    volume = client.volumes.create(1, volume_type=volume_type.id)
    old, new, third = (str(uuid.uuid4()) for _ in range(3))

    client.volumes.initialize_connection(volume, CONNECTOR)
    client.volumes.attach(volume, old, "/dev/vdb")
    created = client.attachments.create(volume.id, other_host("cmp-2"), new, mode="ro")
    client.attachments.complete(created["id"])
    client.volumes.attach(volume, third, "/dev/vdc")
    shown = client.volumes.get(volume.id)
    assert shown.status == "in-use"
    assert {a["server_id"] for a in shown.attachments} == {old, new, third}

    # Without an attachment id a detach cannot tell which is meant.
    with pytest.raises(exceptions.BadRequest) as refused:
        client.volumes.detach(volume)
    assert "More than one attachment" in str(refused.value)

    # The admin's force-detach removes exactly one of the three.
    legacy = next(a["attachment_id"] for a in shown.attachments if a["server_id"] == old)
    client.volumes._action("os-force_detach", volume, {"attachment_id": legacy, "connector": CONNECTOR})
    remaining = client.volumes.get(volume.id).attachments
    assert {a["server_id"] for a in remaining} == {new, third}
    client.attachments.delete(created["id"])
    last = client.volumes.get(volume.id).attachments[0]["attachment_id"]
    client.volumes.detach(volume, last)
    assert status(client, volume) == "available"


def test_a_second_instance_is_refused_on_an_ordinary_volume(client):
    volume = client.volumes.create(1)
    client.volumes.attach(volume, str(uuid.uuid4()), "/dev/vdb")
    with pytest.raises(exceptions.BadRequest) as refused:
        client.volumes.attach(volume, str(uuid.uuid4()), "/dev/vdb")
    assert "multiple attachments are not enabled" in str(refused.value)
    assert len(client.volumes.get(volume.id).attachments) == 1
