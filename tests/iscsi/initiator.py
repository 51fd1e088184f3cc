#!/usr/bin/env python3
"""A real iSCSI initiator for the tests: libiscsi (libiscsi.so.7) through ctypes.

Logs in with what an attachment's connection_info gives, then answers commands read
one per line from stdin, one JSON line each on stdout:

    write LBA TEXT    writes TEXT (padded to whole blocks) at LBA
    read LBA BLOCKS   reads BLOCKS blocks at LBA, answers their text (trailing NULs cut)
    capacity          READ CAPACITY(16): the size in bytes

The first line out tells whether the login worked: {"login": true} or
{"login": false, "error": "..."}. Any failure of a command is {"ok": false, "error": ...}
with the SCSI sense key when there is one (7 is DATA PROTECT: a write to a read-only LU).
"""

import argparse
import ctypes
import json
import sys

BLOCK = 512
SCSI_STATUS_GOOD = 0
ISCSI_SESSION_NORMAL = 2
ISCSI_HEADER_DIGEST_NONE_CRC32C = 1
# struct scsi_task: int status at 0; struct scsi_sense at 48 with the key at +4.
SENSE_KEY_OFFSET = 52


class Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


def load():
    lib = ctypes.CDLL("libiscsi.so.7")
    lib.iscsi_create_context.restype = ctypes.c_void_p
    lib.iscsi_create_context.argtypes = [ctypes.c_char_p]
    lib.iscsi_get_error.restype = ctypes.c_char_p
    lib.iscsi_get_error.argtypes = [ctypes.c_void_p]
    for name in ("iscsi_set_targetname",):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.iscsi_set_session_type.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.iscsi_set_header_digest.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.iscsi_set_initiator_username_pwd.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.iscsi_full_connect_sync.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.iscsi_write16_sync.restype = ctypes.c_void_p
    lib.iscsi_write16_sync.argtypes = [
        ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint32,
        ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.iscsi_read16_iov_sync.restype = ctypes.c_void_p
    lib.iscsi_read16_iov_sync.argtypes = [
        ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int,
        ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
        ctypes.POINTER(Iovec), ctypes.c_int]
    lib.iscsi_readcapacity16_sync.restype = ctypes.c_void_p
    lib.iscsi_readcapacity16_sync.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.iscsi_set_noautoreconnect.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.iscsi_set_timeout.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.scsi_free_scsi_task.argtypes = [ctypes.c_void_p]
    lib.iscsi_logout_sync.argtypes = [ctypes.c_void_p]
    lib.iscsi_destroy_context.argtypes = [ctypes.c_void_p]
    return lib


class Session:
    def __init__(self, lib, args):
        self.lib, self.lun = lib, args.lun
        self.ctx = lib.iscsi_create_context(args.initiator.encode())
        lib.iscsi_set_targetname(self.ctx, args.target.encode())
        lib.iscsi_set_session_type(self.ctx, ISCSI_SESSION_NORMAL)
        lib.iscsi_set_header_digest(self.ctx, ISCSI_HEADER_DIGEST_NONE_CRC32C)
        # A session the target ends stays ended: its next command fails instead of
        # logging in again behind the test's back.
        lib.iscsi_set_noautoreconnect(self.ctx, 1)
        lib.iscsi_set_timeout(self.ctx, 10)
        if args.username:
            lib.iscsi_set_initiator_username_pwd(
                self.ctx, args.username.encode(), args.password.encode())

    def error(self):
        return (self.lib.iscsi_get_error(self.ctx) or b"").decode(errors="replace")

    def login(self, portal):
        return self.lib.iscsi_full_connect_sync(self.ctx, portal.encode(), self.lun) == 0

    def finish(self, task, what):
        """The task's outcome; frees it."""
        if not task:
            return {"ok": False, "error": f"{what}: {self.error()}"}
        status = ctypes.c_int.from_address(task).value
        if status != SCSI_STATUS_GOOD:
            key = ctypes.c_int.from_address(task + SENSE_KEY_OFFSET).value
            self.lib.scsi_free_scsi_task(task)
            return {"ok": False, "status": status, "sense_key": key,
                    "error": f"{what}: {self.error()}"}
        self.lib.scsi_free_scsi_task(task)
        return {"ok": True}

    def write(self, lba, text):
        data = text.encode()
        data += b"\0" * (-len(data) % BLOCK)
        task = self.lib.iscsi_write16_sync(self.ctx, self.lun, lba, data, len(data), BLOCK,
                                           0, 0, 0, 0, 0)
        return self.finish(task, "write")

    def read(self, lba, blocks):
        buffer = ctypes.create_string_buffer(blocks * BLOCK)
        iov = Iovec(ctypes.cast(buffer, ctypes.c_void_p), blocks * BLOCK)
        task = self.lib.iscsi_read16_iov_sync(self.ctx, self.lun, lba, blocks * BLOCK, BLOCK,
                                              0, 0, 0, 0, 0, ctypes.byref(iov), 1)
        answer = self.finish(task, "read")
        if answer["ok"]:
            answer["text"] = buffer.raw.rstrip(b"\0").decode(errors="replace")
        return answer

    def capacity(self):
        task = self.lib.iscsi_readcapacity16_sync(self.ctx, self.lun)
        if not task:
            return {"ok": False, "error": f"capacity: {self.error()}"}
        # struct scsi_readcapacity16 begins with uint64 returned_lba, uint32 block_length;
        # libiscsi unmarshalls it into the task's datain (pointer at offset 72).
        self.lib.scsi_datain_unmarshall.restype = ctypes.c_void_p
        self.lib.scsi_datain_unmarshall.argtypes = [ctypes.c_void_p]
        parsed = self.lib.scsi_datain_unmarshall(task)
        answer = self.finish(task, "capacity") if not parsed else None
        if parsed:
            last_lba = ctypes.c_uint64.from_address(parsed).value
            block_length = ctypes.c_uint32.from_address(parsed + 8).value
            answer = {"ok": True, "bytes": (last_lba + 1) * block_length}
            self.lib.scsi_free_scsi_task(task)
        return answer


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--portal", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--lun", type=int, default=1)
    parser.add_argument("--initiator", required=True)
    parser.add_argument("--username")
    parser.add_argument("--password")
    args = parser.parse_args()
    session = Session(load(), args)
    if not session.login(args.portal):
        print(json.dumps({"login": False, "error": session.error()}), flush=True)
        return 1
    print(json.dumps({"login": True}), flush=True)
    for line in sys.stdin:
        words = line.split(maxsplit=2)
        if not words:
            continue
        if words[0] == "write":
            answer = session.write(int(words[1]), words[2].rstrip("\n") if len(words) > 2 else "")
        elif words[0] == "read":
            answer = session.read(int(words[1]), int(words[2]))
        elif words[0] == "capacity":
            answer = session.capacity()
        else:
            answer = {"ok": False, "error": f"unknown command {words[0]!r}"}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
