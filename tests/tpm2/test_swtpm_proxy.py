"""swtpm management and the proxy with a real swtpm behind it."""

from __future__ import annotations

import socket
import time

import pytest
from tpm2_pytss import ESAPI, TCTILdr

from trustlab.devices.tpm2 import wire as tpm2wire
from trustlab.serving import wire
from trustlab.serving.proxy import TimingProxy
from trustlab.serving.swtpm import Swtpm

from .conftest import make_profile, needs_swtpm

pytestmark = needs_swtpm
GETRANDOM = tpm2wire.build_command(0x17B, b"\x00\x08")


def test_swtpm_lifecycle_and_cleanup():
    tpm = Swtpm().start()
    state, pid = tpm.state_dir, tpm.proc.pid
    assert wire.response_code(tpm.send(GETRANDOM)) == 0
    tpm.reset()
    assert wire.response_code(tpm.send(GETRANDOM)) == 0
    tpm.stop()
    assert not state.exists() and not tpm.alive
    with pytest.raises(ProcessLookupError):
        import os
        os.kill(pid, 0)


def test_swtpm_unix_sockets_and_no_startup():
    with Swtpm(unix=True, startup=False) as tpm:
        assert tpm.tcti.startswith("swtpm:path=")
        assert wire.response_code(tpm.send(GETRANDOM)) == 0x100  # TPM_RC_INITIALIZE
        assert wire.response_code(tpm.send(tpm2wire.startup_command())) == 0


def test_pytss_through_proxy_virtual(virtual_proxy):
    with ESAPI(TCTILdr("swtpm", virtual_proxy.tcti_conf)) as esys:
        assert len(esys.get_random(16)) == 16
        handle, *_ = esys.create_primary(None, "ecc256")
        esys.flush_context(handle)
    names = [r.command for r in virtual_proxy.records]
    assert names == ["TPM2_GetRandom", "TPM2_CreatePrimary", "TPM2_FlushContext"]
    assert virtual_proxy.records[1].variant == "ecc256"
    assert not any(r.unmodelled for r in virtual_proxy.records)


def test_virtual_mode_records_but_does_not_sleep(swtpm):
    prof = make_profile(ohc=500.0, ohir=0.0, ohor=0.0)
    with TimingProxy(prof, swtpm, virtual=True) as proxy:
        t = time.perf_counter()
        with socket.create_connection(("127.0.0.1", proxy.port)) as s:
            s.sendall(GETRANDOM)
            assert wire.response_code(s.recv(100)) == 0
        assert time.perf_counter() - t < 0.4
        assert proxy.records[0].modelled_ms == pytest.approx(500.0)
        assert proxy.clock.now_ms == pytest.approx(500.0)


def test_realtime_holds_response(swtpm):
    prof = make_profile(ohc=30.0, ohir=0.0, ohor=0.0)
    with TimingProxy(prof, swtpm) as proxy, socket.create_connection(("127.0.0.1", proxy.port)) as s:
        t = time.perf_counter()
        s.sendall(GETRANDOM)
        s.recv(100)
        assert (time.perf_counter() - t) * 1000 >= 30.0


def test_mssim_framing_and_platform_port(swtpm, zero_profile):
    with TimingProxy(zero_profile, swtpm, virtual=True) as proxy:  # the default serves both TCTIs
        with ESAPI(TCTILdr("mssim", proxy.tcti_conf)) as esys:
            assert len(esys.get_random(8)) == 8
        assert proxy.records[-1].framing == "mssim"


def test_unmodelled_command_is_flagged(virtual_proxy):
    with socket.create_connection(("127.0.0.1", virtual_proxy.port)) as s:
        s.sendall(tpm2wire.build_command(0x12F, b""))  # FieldUpgradeStart: no formula
        s.recv(100)
    assert virtual_proxy.records[-1].unmodelled


def test_owned_backend_and_trace_file(tmp_path, zero_profile):
    trace = tmp_path / "t.jsonl"
    with TimingProxy(zero_profile, "swtpm", virtual=True, trace=trace) as proxy:
        swtpm = proxy.backend.owned
        with socket.create_connection(("127.0.0.1", proxy.port)) as s:
            s.sendall(GETRANDOM)
            s.recv(100)
    assert not swtpm.alive
    import json
    (line,) = trace.read_text().splitlines()
    rec = json.loads(line)
    assert rec["command"] == "TPM2_GetRandom" and rec["in_bytes"] == 12 and rec["out_bytes"] == 20
    assert {"modelled_ms", "backend_ms", "rc", "unmodelled", "served_ms", "late", "late_count", "rm_ms"} <= set(rec)


def test_control_channel_relay_and_proxy_reset(swtpm, zero_profile):
    import struct

    with TimingProxy(zero_profile, swtpm, virtual=True) as proxy:
        with ESAPI(TCTILdr("swtpm", proxy.tcti_conf)) as esys:
            handle, *_ = esys.create_primary(None, "ecc256")
        assert proxy.records[-1].variant == "ecc256" and proxy.loaded_objects() == 1  # saved by the RM
        with socket.create_connection(("127.0.0.1", proxy.ctrl_port)) as ctrl:
            ctrl.sendall(struct.pack(">I", wire.CMD_GET_CAPABILITY))
            reply = ctrl.recv(8)
        assert len(reply) == 8 and wire.ctrl_result(reply) == 0
        proxy.reset()
        assert not proxy.objects.by_handle and proxy.loaded_objects() == 0 and proxy.clock.now_ms == 0
        with socket.create_connection(("127.0.0.1", proxy.port)) as s:
            s.sendall(GETRANDOM)
            assert wire.response_code(s.recv(100)) == 0
        with socket.create_connection(("127.0.0.1", proxy.ctrl_port)) as ctrl:
            ctrl.sendall(wire.ctrl_init())
            assert wire.ctrl_result(ctrl.recv(4)) == 0
        with socket.create_connection(("127.0.0.1", proxy.port)) as s:
            s.sendall(GETRANDOM)  # CMD_INIT is a power cycle followed by the BIOS's TPM2_Startup(CLEAR)
            assert wire.response_code(s.recv(100)) == 0
    with TimingProxy(zero_profile, swtpm, virtual=True, startup="none") as proxy:
        with socket.create_connection(("127.0.0.1", proxy.ctrl_port)) as ctrl:
            ctrl.sendall(wire.ctrl_init())
            assert wire.ctrl_result(ctrl.recv(4)) == 0
        with socket.create_connection(("127.0.0.1", proxy.port)) as s:
            s.sendall(GETRANDOM)  # --startup none: the client sends TPM2_Startup itself
            assert wire.response_code(s.recv(100)) == 0x100


def test_timed_swtpm_helper():
    from trustlab.serving.proxy import timed_swtpm

    with timed_swtpm("nuvoton-npct750-wolftpm", virtual=True) as proxy:
        tpm = proxy.backend.owned
        with ESAPI(TCTILdr("swtpm", proxy.tcti_conf)) as esys:
            esys.get_random(8)
        assert proxy.clock.now_ms == pytest.approx(proxy.profile.mean("ohc"))
    assert not tpm.alive


def test_owned_swtpm_on_unix_sockets_tcp_only_for_a_swtpm_without_them(tmp_path, zero_profile):
    from trustlab.serving.swtpm import unix_data_channel, unixio_supported

    assert unixio_supported()  # the installed swtpm (0.7) has --server type=unixio
    with TimingProxy(zero_profile, "swtpm", virtual=True) as proxy:
        assert proxy.backend.describe().startswith("unix:")
    # an older swtpm, whose --help lists only TCP servers: TCP, said once however often it is asked
    old = tmp_path / "swtpm-old"
    old.write_text("#!/bin/sh\necho '--server [type=tcp][,port=port]'\n")
    old.chmod(0o755)
    said: list[str] = []
    assert not unix_data_channel(str(old), log=said.append)
    assert not unix_data_channel(str(old), log=said.append)
    assert len(said) == 1 and "type=unixio" in said[0] and "TCP" in said[0]
