"""QA regressions: ``run oracle`` rejects out-of-range sizes at once, as one line, exit 2."""

from __future__ import annotations

import pytest

from trustlab.cli import main
from trustlab.experiments.registry import get
from trustlab.timing.registry import load


@pytest.mark.parametrize("argv, flag", [
    (["--queries", "0"], "--queries 0"),
    (["--queries", "-2"], "--queries -2"),
    (["--parties", "1"], "--parties 1"),
    (["--parties", "100000000000000000000"], "--parties 100000000000000000000"),
    (["--input-blocks", "0"], "--input-blocks 0"),
    (["--output-blocks", "-1"], "--output-blocks -1"),
    # inside the old 1..4096 but beyond what TPM_HMAC takes: failed inside the TPM without naming the flag
    (["--input-blocks", "2000"], "--input-blocks 2000"),
    # inside the old 1..1024 but a TPM_HMAC frame beyond the 4096-byte command buffer
    (["--input-blocks", "64"], "--input-blocks 64"),
    (["--output-blocks", "100"], "--output-blocks 100"),
])
def test_out_of_range_is_one_line_error(argv, flag, capsys) -> None:
    assert main(["run", "oracle", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"trustlab: error: {flag}: must be between") and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_every_argument_has_help() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    get("oracle").add_arguments(parser)
    for action in parser._actions:
        if action.dest != "help":
            assert action.help, action.dest


def _frame_sizes(monkeypatch, ordinal: str) -> list[int]:
    """The command frame length of every ``ordinal`` the host's client sends (header, handles, parameters and
    one 45-byte authorization per session), recorded while the test runs."""
    from trustlab.devices.tpm12.client import Tpm12

    sent: list[int] = []
    call = Tpm12.call

    def recording(self, name, handles=(), params=b"", auth=(), **kw):
        if name == ordinal:
            sent.append(10 + 4 * len(handles) + len(params) + 45 * len(auth))
        return call(self, name, handles=handles, params=params, auth=auth, **kw)

    monkeypatch.setattr(Tpm12, "call", recording)
    return sent


def test_parties_bound_is_the_command_buffer(monkeypatch, capsys) -> None:
    """--parties stops where the source's TPM_CMK_CreateBlob (its msaList names every destination) would
    outgrow libtpms' 4096-byte command buffer; 66..1000 used to be accepted and then failed inside the
    engine (TPM_BAD_PARAM_SIZE) after every party had been set up. The size the bound rests on is
    compared with the frame the client really builds."""
    from trustlab.apps import oracle as app
    from trustlab.devices.tpm12.constants import TPM_BUFFER_MAX
    from trustlab.experiments.oracle import MAX_PARTIES

    assert app.cmk_create_blob_bytes(MAX_PARTIES) <= TPM_BUFFER_MAX < app.cmk_create_blob_bytes(MAX_PARTIES + 1)
    assert main(["run", "oracle", "--parties", str(MAX_PARTIES + 1)]) == 2
    assert f"--parties {MAX_PARTIES + 1}: must be between 2 and {MAX_PARTIES}" in capsys.readouterr().err

    sent = _frame_sizes(monkeypatch, "TPM_CMK_CreateBlob")
    for parties in (2, 4):
        sent.clear()
        assert main(["run", "oracle", "--parties", str(parties), "--queries", "1", "--json"]) == 0
        assert set(sent) == {app.cmk_create_blob_bytes(parties)}


def test_input_blocks_bound_is_the_command_buffer(monkeypatch, capsys) -> None:
    """--input-blocks stops where a query's TPM_HMAC frame would outgrow the TPM's 4096-byte command buffer
    (63 blocks); 64..1024 used to be accepted and ran in process with inputs a TPM would refuse. The size the
    bound rests on is compared with the frame the client really builds, and the engine refuses the next size."""
    from trustlab.apps import oracle as app
    from trustlab.devices.tpm12.constants import TPM_BUFFER_MAX
    from trustlab.experiments.oracle import MAX_INPUT_BLOCKS

    assert MAX_INPUT_BLOCKS == 63
    assert app.tpm_hmac_bytes(MAX_INPUT_BLOCKS) <= TPM_BUFFER_MAX < app.tpm_hmac_bytes(MAX_INPUT_BLOCKS + 1)
    assert main(["run", "oracle", "--input-blocks", str(MAX_INPUT_BLOCKS + 1)]) == 2
    assert (f"--input-blocks {MAX_INPUT_BLOCKS + 1}: must be between 1 and {MAX_INPUT_BLOCKS}"
            in capsys.readouterr().err)

    sent = _frame_sizes(monkeypatch, "TPM_HMAC")
    for blocks in (1, MAX_INPUT_BLOCKS):
        sent.clear()
        assert main(["run", "oracle", "--input-blocks", str(blocks), "--queries", "1", "--json"]) == 0
        assert set(sent) == {app.tpm_hmac_bytes(blocks)}
    sent.clear()
    with pytest.raises(Exception, match="TPM_BAD_PARAM_SIZE"):  # the engine itself refuses one block more
        app.run(load("sim-2010"), 2, input_blocks=MAX_INPUT_BLOCKS + 1, queries=1)
    assert set(sent) == {app.tpm_hmac_bytes(MAX_INPUT_BLOCKS + 1)}


def test_msa_list_longer_than_64_entries() -> None:
    """Like libtpms (no MSAlist limit, 'FIXME add MSAlist limit'), the engine takes any count the buffer holds."""
    from trustlab.devices.tpm12.commands.migration import msa_digests

    digests = [bytes([i]) * 20 for i in range(150)]
    assert msa_digests((150).to_bytes(4, "big") + b"".join(digests)) == digests
