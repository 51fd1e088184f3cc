"""openstacksdk's block_storage v3 proxy against cinder-attach (admin_token auth with an
endpoint override, so version discovery runs against our `/v3` documents), and
openstacksdk's own functional tests for volumes and types."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import openstack
import pytest
import requests
from openstack import exceptions

import tempest_schemas

HERE = Path(__file__).resolve().parent

CONNECTOR = {"host": "compute-1", "initiator": "iqn.1993-08.org.debian:01:abc", "ip": "10.0.0.2",
             "platform": "x86_64", "os_type": "linux", "multipath": False, "mountpoint": "/dev/vdb"}


def connect(server, token="admin:p1", project="p1"):
    """The block-storage proxy; every response it gets is checked against tempest's
    response schemas."""
    conn = openstack.connect(
        auth_type="admin_token",
        auth={"endpoint": f"{server.url}/v3/{project}", "token": token},
        block_storage_endpoint_override=f"{server.url}/v3/{project}",
        block_storage_api_version="3",
    )
    conn.session.session.hooks["response"].append(tempest_schemas.validate)
    return conn.block_storage


@pytest.fixture
def sdk(server):
    return connect(server)


def available_volume(sdk, **attrs):
    volume = sdk.create_volume(size=1, name=f"sdk-{uuid.uuid4().hex[:8]}", **attrs)
    return sdk.wait_for_status(volume, status="available", failures=["error"], interval=0.2, wait=30)


def test_version_documents_match_tempest_schemas(server):
    session = requests.Session()
    session.hooks["response"].append(tempest_schemas.validate)
    before = len(tempest_schemas.checked)
    assert session.get(f"{server.url}/").status_code == 300
    assert session.get(f"{server.url}/v3/").status_code == 200
    assert len(tempest_schemas.checked) == before + 2


def test_volume_metadata_matches_tempest_schemas(sdk):
    volume = available_volume(sdk, metadata={"a": "1"})
    sdk.set_volume_metadata(volume, b="2")
    assert sdk.get_volume_metadata(volume).metadata == {"a": "1", "b": "2"}
    sdk.delete_volume_metadata(volume, keys=["a"])
    assert sdk.get_volume(volume.id).metadata == {"b": "2"}
    sdk.delete_volume(volume)


def test_discovery_negotiates_the_highest_microversion(sdk):
    # keystoneauth reads our version document; the proxy then speaks 3.71.
    assert sdk.get_endpoint().endswith("/v3/p1")
    version = sdk.get_endpoint_data().max_microversion
    assert (version[0], version[1]) == (3, 71)


def test_types_and_volumes(sdk):
    name = f"sdk-type-{uuid.uuid4().hex[:8]}"
    created = sdk.create_type(name=name, extra_specs={"multiattach": "<is> True"})
    assert created.name == name
    assert sdk.get_type(created.id).extra_specs == {"multiattach": "<is> True"}
    assert created.id in {t.id for t in sdk.types()}
    assert sdk.find_type(name).id == created.id

    volume = available_volume(sdk, volume_type=name, metadata={"k": "v"})
    assert volume.is_multiattach is True
    assert volume.volume_type == name
    assert sdk.get_volume(volume.id).metadata == {"k": "v"}
    assert volume.id in {v.id for v in sdk.volumes(details=True)}
    assert sdk.find_volume(volume.name).id == volume.id
    updated = sdk.update_volume(volume, name="renamed", description="d")
    assert (updated.name, updated.description) == ("renamed", "d")
    # A type in use cannot go.
    with pytest.raises(exceptions.BadRequestException):
        sdk.delete_type(created)
    sdk.delete_volume(volume)
    sdk.wait_for_delete(volume, interval=0.2, wait=30)
    sdk.delete_type(created)
    with pytest.raises(exceptions.NotFoundException):
        sdk.get_type(created.id)
    kinds = {path.split("/")[3] for _, path, _ in tempest_schemas.checked if path.count("/") >= 3}
    assert {"types", "volumes"} <= kinds, tempest_schemas.checked


def test_attachment_lifecycle(sdk):
    volume = available_volume(sdk)
    instance = str(uuid.uuid4())
    attachment = sdk.create_attachment(volume, instance=instance)
    assert attachment.status == "reserved"
    assert sdk.get_volume(volume.id).status == "reserved"

    connected = sdk.update_attachment(attachment, connector=CONNECTOR)
    assert connected.status == "attaching"
    assert connected.connection_info["driver_volume_type"] in ("local", "nfs")
    sdk.complete_attachment(attachment)
    shown = sdk.get_attachment(attachment.id)
    assert shown.status == "attached"
    assert shown.instance == instance
    assert sdk.get_volume(volume.id).status == "in-use"
    listed = list(sdk.attachments(volume_id=volume.id))
    assert [a.id for a in listed] == [attachment.id]

    # A second server may not attach a volume without multiattach.
    with pytest.raises(exceptions.BadRequestException):
        sdk.create_attachment(volume, instance=str(uuid.uuid4()), connector=CONNECTOR)

    sdk.delete_attachment(attachment, ignore_missing=False)
    assert sdk.get_volume(volume.id).status == "available"
    assert list(sdk.attachments(volume_id=volume.id)) == []
    with pytest.raises(exceptions.NotFoundException):
        sdk.get_attachment(attachment.id)


def test_multiattach_read_only_and_read_write(sdk):
    type_name = f"sdk-ma-{uuid.uuid4().hex[:8]}"
    sdk.create_type(name=type_name, extra_specs={"multiattach": "<is> True"})
    volume = available_volume(sdk, volume_type=type_name)
    ids = []
    for mode in ("rw", "ro"):
        attachment = sdk.create_attachment(volume, instance=str(uuid.uuid4()), connector=CONNECTOR, mode=mode)
        assert attachment.status == "attaching"
        assert attachment.connection_info["access_mode"] == mode
        sdk.complete_attachment(attachment)
        ids.append(attachment.id)
    assert sdk.get_volume(volume.id).status == "in-use"
    assert {a.status for a in sdk.attachments(volume_id=volume.id)} == {"attached"}
    for attachment_id in ids:
        sdk.delete_attachment(attachment_id, ignore_missing=False)
    assert sdk.get_volume(volume.id).status == "available"


def test_three_servers_limits_and_a_single_writer(sdk):
    """Two rw and one ro at once on a type capped at three; a fourth refused; then a
    single-writer type refusing a second rw."""
    capped = f"sdk-cap-{uuid.uuid4().hex[:8]}"
    sdk.create_type(name=capped, extra_specs={"multiattach": "<is> True", "attach:max_attachments": "3"})
    volume = available_volume(sdk, volume_type=capped)
    made = []
    for host, mode in (("cmp-1", "rw"), ("cmp-2", "rw"), ("cmp-3", "ro")):
        connector = dict(CONNECTOR, host=host)
        made.append(sdk.create_attachment(volume, instance=str(uuid.uuid4()), connector=connector, mode=mode))
    assert [a.status for a in made] == ["attaching"] * 3
    assert [a.connection_info["access_mode"] for a in made] == ["rw", "rw", "ro"]
    for attachment in made:
        sdk.complete_attachment(attachment)
    assert sdk.get_volume(volume.id).status == "in-use"
    with pytest.raises(exceptions.BadRequestException, match="already has 3 attachments"):
        sdk.create_attachment(volume, instance=str(uuid.uuid4()))

    single = f"sdk-sw-{uuid.uuid4().hex[:8]}"
    sdk.create_type(name=single, extra_specs={"multiattach": "<is> True", "attach:single_writer": "<is> True"})
    shared = available_volume(sdk, volume_type=single)
    writer = sdk.create_attachment(shared, instance=str(uuid.uuid4()), connector=CONNECTOR, mode="rw")
    sdk.create_attachment(shared, instance=str(uuid.uuid4()), connector=dict(CONNECTOR, host="cmp-2"), mode="ro")
    with pytest.raises(exceptions.BadRequestException, match=f"attachment {writer.id} holds write access"):
        sdk.create_attachment(shared, instance=str(uuid.uuid4()), connector=dict(CONNECTOR, host="cmp-3"),
                              mode="rw")


def test_quotas_limits_and_private_types(server, sdk):
    """The proxy's quota, limit and type-access calls (openstacksdk's own quota test needs
    Keystone to make a project, so its steps are here on a made-up project id)."""
    project = f"sdk-{uuid.uuid4().hex[:8]}"
    updated = sdk.update_quota_set(project, volumes=123)
    assert updated.volumes == 123
    assert sdk.get_quota_set(project).volumes == 123
    assert sdk.get_quota_set_defaults(project).volumes == 10
    sdk.revert_quota_set(project)
    assert sdk.get_quota_set(project).volumes == 10

    sdk.update_quota_set("p1", volumes=1)
    available_volume(sdk)
    with pytest.raises(exceptions.HttpException) as refused:
        sdk.create_volume(size=1)
    assert refused.value.status_code == 413
    usage = sdk.get_quota_set("p1", usage=True)
    assert usage.usage["volumes"] == 1, usage.usage
    limits = sdk.get_limits()
    assert limits.absolute.max_total_volumes == 1
    assert limits.absolute.total_volumes_used == 1

    private = sdk.create_type(name=f"vip-{uuid.uuid4().hex[:6]}", is_public=False)
    sdk.add_type_access(private, "p2")
    assert [a["project_id"] for a in sdk.get_type_access(private)] == ["p2"]
    other = connect(server, token="eve:p2:member,reader", project="p2")
    assert other.get_type(private.id).id == private.id
    sdk.remove_type_access(private, "p2")
    with pytest.raises(exceptions.NotFoundException):
        other.get_type(private.id)


def test_openstacksdk_functional_tests(server, tmp_path):
    """openstacksdk's own functional tests for the APIs served here."""
    clouds = (HERE / "clouds.yaml").read_text().replace("@ENDPOINT@", server.url)
    (tmp_path / "clouds.yaml").write_text(clouds)
    tests = Path(openstack.__file__).parent / "tests" / "functional" / "block_storage" / "v3"
    env = dict(os.environ, OS_CLIENT_CONFIG_FILE=str(tmp_path / "clouds.yaml"),
               OPENSTACKSDK_FUNC_TEST_TIMEOUT="60")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         str(tests / "test_volume.py"), str(tests / "test_type.py"), str(tests / "test_limits.py"),
         str(tests / "test_snapshot.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "skipped" not in result.stdout.splitlines()[-1], result.stdout
