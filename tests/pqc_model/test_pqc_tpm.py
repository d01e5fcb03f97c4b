"""``trustlab run pqc-tpm`` end to end through the CLI, and the pricing it rests on."""

import contextlib
import io
import json
import random
import statistics

import pytest

from trustlab.cli import main
from trustlab.devices.tpm2.pqc_model import chips, chipspec, classes, estimate, frames, keccak_impl, model
from trustlab.devices.tpm2.pqc_model.cost import operation_cost, unit_costs
from trustlab.devices.tpm2.pqc_model.params import ALGORITHMS, params
from trustlab.timing import registry

from .cli_run import run

FAST = ("--profiles", "st-st33ktpm2xspi-wolftpm,infineon-slb9673-wolftpm,intel-ptt-11.6.0.1126-jcalgtest",
        "--draws", "20")


@pytest.fixture(scope="module")
def result():
    rc, out, err = run("run", "pqc-tpm", *FAST, "--json")
    assert rc == 0, err
    return json.loads(out)


def test_json_has_every_profile_algorithm_and_operation(result):
    rows = result["rows"]
    assert {r["profile"] for r in rows} == set(FAST[1].split(","))
    assert {r["algorithm"] for r in rows} == set(ALGORITHMS)
    for r in rows:
        assert 0 < r["served_median_ms"] <= r["p95_ms"]
        assert 0 < r["low_ms"] <= r["median_ms"] <= r["high_ms"] and r["provenance"]  # every row: an interval
        assert 0 <= r["bus_share"] < 1
        assert r["fits_buffer"] == (r["largest_frame"] <= r["max_command_size"])
    assert {(a["profile"], a["algorithm"]) for a in result["attestation"]} == {
        (p, a) for p in FAST[1].split(",") for a in ALGORITHMS if "DSA" in a}


def test_classical_twins_come_from_the_profile(result):
    st = {(r["algorithm"], r["operation"]): r for r in result["rows"] if r["profile"] == "st-st33ktpm2xspi-wolftpm"}
    prof = registry.load("st-st33ktpm2xspi-wolftpm")
    # TPM2_Sign (ECDSA P-256) = ohc + ecc256_sign: the wolfTPM figure, whole-operation
    assert st[("ML-DSA-65", "sign")]["ECDSA P-256 median_ms"] == pytest.approx(prof.mean("ohc") + prof.mean("ecc256_sign"))
    # ML-DSA-65 signatures (3309 bytes) do not fit a 2048-byte I/O buffer; ML-KEM-768 ciphertexts do
    assert not st[("ML-DSA-65", "sign")]["fits_buffer"] and st[("ML-KEM-768", "decapsulate")]["fits_buffer"]


def test_i2c_bus_dominates_more_than_spi(result):
    share = {r["profile"]: r["bus_share"] for r in result["rows"]
             if r["algorithm"] == "ML-KEM-768" and r["operation"] == "decapsulate"}
    assert share["infineon-slb9673-wolftpm"] > 5 * share["st-st33ktpm2xspi-wolftpm"]
    assert share["intel-ptt-11.6.0.1126-jcalgtest"] == 0  # firmware TPM: shared memory


def test_text_plots_and_validation_rows():
    rc, out, err = run("run", "pqc-tpm", *FAST, "--algorithms", "ML-DSA-65,ML-KEM-768")
    assert rc == 0, err
    assert "Validation, leave-one-source-out" in out and "Per source:" in out and "Calibration" in out
    assert "sealsq-qvault-pqc-tpm-wolftpm" in out  # the silicon figures, as calibration rows


def test_pqc_platforms_are_classed_by_their_core_group():
    """The x86 and Cortex-A measurement platforms were all 'microcontroller' in validate's accuracy table."""
    from trustlab.validation import run as validate

    by_class = {}
    for c in validate().checks:
        if c.profile.startswith("(") and c.kind == "independent":
            by_class.setdefault(c.device_class, set()).add(c.profile.split(":")[0].strip("("))
    assert {"host-x86", "a-class", "riscv64"} <= by_class["application processor"]
    assert "cortex-m4" in by_class["microcontroller"] and not by_class["microcontroller"] & {"host-x86", "a-class"}
    assert by_class["smart card"] == {"secure-mcu"}


def test_a_chip_only_run_reports_without_undrawable_figures(tmp_path):
    """--chip without --profiles: the per-profile bar charts had empty series, and the report said of each
    'could not be drawn: Data cannot be log-scaled'."""
    saved = tmp_path / "in" / "chip.json"
    rc, out, err = run("run", "pqc-tpm", "--draws", "10", "--chip", "core=m4,mhz=100", "--save", str(saved))
    assert rc == 0, err
    record = json.loads(saved.read_text())
    assert all(s.get("y") for p in record["plots"] for s in p["series"] if p["kind"] == "bar")
    rc, out, err = run("report", str(saved), "--out", str(tmp_path / "report"))
    assert rc == 0, err
    assert "could not be drawn" not in (tmp_path / "report" / "index.html").read_text()


def test_chip_facts_are_in_the_json():
    """A --chip's assumptions (build, implementation, certified, tpm, bus) in --json's "chips", as a profile's are
    (it was empty for a --chip-only run)."""
    rc, out, err = run("run", "pqc-tpm", "--draws", "10", "--json",
                       "--chip", "core=m33,mhz=50-150,build=size,impl=optimized,tpm=yes,bus=spi:33,name=mine")
    assert rc == 0, err
    (fact,) = json.loads(out)["chips"]
    assert fact["chip"] == "mine" and fact["profile"] is None and fact["clock_mhz"] == [50.0, 150.0]
    assert (fact["core_class"], fact["build"], fact["implementation"], fact["tpm"], fact["bus"], fact["bus_hz"]) == \
        ("cortex-m33", "size", "optimized", True, "spi", 33e6)


def test_same_seed_same_numbers():
    a = json.loads(run("run", "pqc-tpm", *FAST, "--algorithms", "ML-DSA-44", "--seed", "7", "--json")[1])
    b = json.loads(run("run", "pqc-tpm", *FAST, "--algorithms", "ML-DSA-44", "--seed", "7", "--json")[1])
    assert a["rows"] == b["rows"]


@pytest.mark.parametrize("argv, message", [
    (["--draws", "3"], "--draws must be between"),
    (["--draws", "20001"], "--draws must be between 10 and 20000, got 20001"),
    (["--algorithms", "ML-DSA-99"], "--algorithms: 'ML-DSA-99' is not one of"),
    (["--profiles", "sim-2010"], "is a 'tpm1.2' profile, not tpm2"),
    (["--profiles", "no-such-chip"], "unknown profile"),
    (["--profiles", "st-st33ktpm2xspi-wolftpm", "--focus", "no-such-chip"], "--focus: 'no-such-chip' is not among"),
    (["--profiles", "st-st33ktpm2xspi-wolftpm", "--focus", "infineon-slb9673-wolftpm"], "--focus"),
])
def test_bad_arguments_are_one_line_errors(argv, message):
    rc, out, err = run("run", "pqc-tpm", *argv)
    assert rc != 0 and message in err and "Traceback" not in err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("extra, shown", [((), True), (("--no-progress",), False)])
def test_long_runs_show_a_progress_bar_on_stderr_only(monkeypatch, extra, shown):
    from trustlab.experiments import pqc_tpm

    monkeypatch.setattr(pqc_tpm, "PROGRESS_MIN_DRAWS", 1)  # every run is "long"
    out, err = io.StringIO(), _Terminal()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["run", "pqc-tpm", *FAST, "--algorithms", "ML-KEM-768,ML-DSA-44", "--json", *extra]) == 0
    assert json.loads(out.getvalue())["draws"] == 20  # stdout is the JSON alone
    assert ("pqc-tpm:" in err.getvalue() and "/6 [" in err.getvalue()) == shown


def test_help_explains_every_argument():
    rc, out, _ = run("run", "pqc-tpm", "--help")
    assert rc == 0
    for flag in ("--profiles", "--algorithms", "--draws", "--focus", "--seed"):
        assert flag in out


def test_help_names_every_class_that_accepts_hand_written_assembly():
    """impl=optimized / mixed is accepted where the model has a sourced assembly speed-up: pqm4's Cortex-M4 code and a
    class's paired C / assembly measurements (Cortex-M3 since data/asm_pairs.toml); the help said pqm4's cores only."""
    rc, out, _ = run("run", "pqc-tpm", "--help")
    text = " ".join(out.split())
    assert rc == 0 and "data/asm_pairs.toml on" in text
    accepting = [c for c in classes.names() if chipspec.assembly_priced(c)]
    assert "cortex-m3" in accepting and "cortex-m4" in accepting
    head, _, _ = text.partition("optimized/mixed only on those cores")
    for cls in accepting:
        assert cls in head[head.index("impl to unknown"):], cls


def test_shipped_companion_profiles_are_current():
    """tools/build_pqc_profiles.py output equals what the model builds now (rerun it after changes)."""
    for name in ("st-st33ktpm2xspi-wolftpm", "infineon-slb9673-wolftpm", "swtpm-native"):
        shipped = registry.load(model.companion_name(name))
        built = model.build(registry.load(name))
        assert shipped.to_toml_dict() == built.to_toml_dict()


def test_pricing_spread_and_structure():
    prof = registry.load("st-st33ktpm2xspi-wolftpm")
    f = frames.use_frames("ML-DSA-65", "sign")
    rng = random.Random(3)
    draws = [sum(operation_cost(prof, "ML-DSA-65", "sign", in_bytes=f.in_bytes, out_bytes=f.out_bytes,
                                rng=rng).values()) for _ in range(300)]
    mean = sum(operation_cost(prof, "ML-DSA-65", "sign", in_bytes=f.in_bytes, out_bytes=f.out_bytes).values())
    assert min(draws) < mean < max(draws)
    assert statistics.quantiles(draws, n=20)[-1] > 1.5 * statistics.median(draws)  # rejection loop + speed
    # a longer message costs more Keccak, never less
    longer = operation_cost(prof, "ML-DSA-65", "sign", in_bytes=f.in_bytes + 4096, out_bytes=f.out_bytes)
    assert longer["pqc_keccak"] > operation_cost(prof, "ML-DSA-65", "sign", in_bytes=f.in_bytes,
                                                 out_bytes=f.out_bytes)["pqc_keccak"]


def test_unshipped_tpm2_profile_is_priced_from_chip_facts():
    base = registry.load("st-st33ktpm2xspi-wolftpm")
    from dataclasses import replace
    mine = replace(base, name="my-lab-chip")
    pqc = unit_costs(mine)
    assert pqc.name == "my-lab-chip-pqc" and chips.chip_for("my-lab-chip").prefix == ""
    assert operation_cost(mine, "ML-KEM-768", "encapsulate", in_bytes=14, out_bytes=1134)["pqc_arith"] > 0


def test_a_chip_states_its_own_processor_text_and_keeps_its_class_ranges():
    """chips.toml cpu / cpu_source on a chip entry replace its class's text (the SEALSQ QVault's class text cited
    Infineon's data sheets); the class's clock and work-per-clock ranges still price it, and chips without their
    own text keep the class's."""
    sealsq, infineon = chips.chip_for("sealsq-qvault-pqc-tpm-wolftpm"), chips.chip_for("infineon-slb9672-wolftpm")
    assert sealsq.cls == infineon.cls == "secure-mcu"
    assert "QVault" in sealsq.cpu and "Infineon" not in sealsq.cpu_source
    assert (sealsq.clock_mhz, sealsq.per_clock) == (infineon.clock_mhz, infineon.per_clock)
    assert "Infineon" in infineon.cpu_source
    assert sealsq.bus_hz == 33e6 and "TPM2_SPI_MAX_HZ_SEALSQ" in sealsq.bus_source


def test_frame_sizes_follow_the_key_and_signature_sizes():
    for alg in ALGORITHMS:
        p = params(alg)
        create, load = frames.keygen_frames(alg)
        assert create.out_bytes > p.pk_bytes and load.in_bytes > p.pk_bytes
    assert frames.use_frames("ML-DSA-87", "sign").out_bytes > params("ML-DSA-87").sig_bytes
    assert frames.use_frames("ML-KEM-1024", "decapsulate").in_bytes > params("ML-KEM-1024").ct_bytes


def test_large_messages_go_through_the_sequence_commands(result):
    rows = {(r["profile"], r["algorithm"], r["operation"]): r for r in result["rows"]}
    for prof, limit in (("st-st33ktpm2xspi-wolftpm", 2048), ("infineon-slb9673-wolftpm", 1280)):
        seq = rows[(prof, "ML-DSA-65", "sign-sequence")]
        assert seq["chunk_bytes"] <= min(1024, limit)
        assert seq["sequence_updates"] == -(-16384 // seq["chunk_bytes"])
        sign = rows[(prof, "ML-DSA-65", "sign")]
        for k in ("median_ms", "low_ms", "high_ms"):  # the one-command sign plus the updates' absorbing
            assert seq[k] > sign[k]
        assert seq["commands"][0] == "TPM2_SignSequenceStart" and seq["commands"][-1] == "TPM2_SignSequenceComplete"
    facts = {f["profile"]: f for f in result["chips"]}
    assert facts["infineon-slb9673-wolftpm"]["bus"] == "i2c" and "cheatsheet" in facts["infineon-slb9673-wolftpm"]["max_command_source"]


def test_software_tpms_are_placed_by_their_measured_ecdsa_sign():
    """A firmware TPM's crypto speed is its measured ECDSA sign, not its core clock (2.2 GHz A78AE)."""
    orin = registry.load("nvidia-jetson-orin-op-tee-ftpm-wolftpm")
    spec = chipspec.for_profile(orin)
    placed = estimate.ECDSA_M4_SIGN_CYCLES / (orin.mean("ecc256_sign") * 1000.0)
    assert estimate.central_speed(spec).general_mhz == pytest.approx(placed, rel=0.01)
    # its Keccak (not stated: centred on C) costs the C/asm ratio over the calibration's assembly Keccak
    assert estimate.central_speed(spec).keccak_mhz == pytest.approx(
        placed / keccak_impl.centre(spec.core, spec.keccak_impl), rel=0.01)
    assert "ECDSA" in estimate.provenance(spec, "ML-DSA-65", "sign", True)


def test_discrete_tpms_are_placed_by_their_own_sha256_rate_unclamped():
    """The ST33K's measured SHA-256 rate places its Keccak speed directly (no clamp to a class range)."""
    st = registry.load("st-st33ktpm2xspi-wolftpm")
    spec = chipspec.for_profile(st)
    placed = estimate.SHA256_M4_CYCLES_PER_BYTE * spec.sha256_bytes_per_ms / 1000.0
    placed *= (estimate.SHA_PLACEMENT[0] * estimate.SHA_PLACEMENT[1]) ** 0.5  # the placement range's centre
    assert estimate.central_speed(spec).general_mhz == pytest.approx(placed, rel=0.02)
    assert estimate.central_speed(spec).keccak_mhz == pytest.approx(
        placed / keccak_impl.centre(spec.core, spec.keccak_impl), rel=0.02)
    assert spec.core == "cortex-m3" and spec.certified
    slb9673 = chipspec.for_profile(registry.load("infineon-slb9673-wolftpm"))  # I2C: the rate is the bus's
    assert slb9673.sha256_bytes_per_ms is None and "bus" in slb9673.notes[0]


def test_validate_carries_the_pqc_rows():
    from trustlab.validation import run as validate

    rows = [c for c in validate().checks if c.device_class in ("microcontroller", "application processor", "smart card")
            or c.profile == "sealsq-qvault-pqc-tpm-wolftpm"]
    assert {c.kind for c in rows} == {"independent", "calibration", "held-out silicon"}  # SEALSQ, model-only
    independent = [c for c in rows if c.kind == "independent"]
    assert len({c.source for c in independent}) >= 5
    flagged = [c for c in independent if c.note.startswith("flagged")]
    # flagged = the sources marked counted = false (each says why in its note): the SLE 78 RSA-coprocessor variant,
    # the ESP32-C3 liboqs build that runs from XIP flash
    not_counted = [s["citation"] for s in classes.measurements()["sources"] if not s["counted"]]
    assert flagged and all(any(c.source.startswith(cit) for cit in not_counted) for c in flagged)
    assert any("SLE 78" in c.source for c in flagged)
    assert {c.command for c in rows if c.profile == "sealsq-qvault-pqc-tpm-wolftpm"} >= {"ML-DSA-65 sign",
                                                                                       "ML-KEM-768 decapsulate"}


def test_protection_is_on_by_default_and_slows_only_secret_key_operations():
    base = ("run", "pqc-tpm", "--profiles", "st-st33ktpm2xspi-wolftpm", "--algorithms", "ML-KEM-768,ML-DSA-44",
            "--draws", "20", "--json")
    on_doc = json.loads(run(*base)[1])
    off_doc = json.loads(run(*base, "--protection", "off")[1])
    on = {(r["algorithm"], r["operation"]): r for r in on_doc["rows"]}
    off = {(r["algorithm"], r["operation"]): r for r in off_doc["rows"]}
    assert on_doc["protection"] is True and off_doc["protection"] is False
    assert on[("ML-KEM-768", "decapsulate")]["median_ms"] > 1.5 * off[("ML-KEM-768", "decapsulate")]["median_ms"]
    assert on[("ML-DSA-44", "sign")]["median_ms"] > off[("ML-DSA-44", "sign")]["median_ms"]
    assert on[("ML-KEM-768", "encapsulate")]["median_ms"] == off[("ML-KEM-768", "encapsulate")]["median_ms"]
    assert on[("ML-DSA-44", "verify")]["median_ms"] == off[("ML-DSA-44", "verify")]["median_ms"]


def test_repeated_names_are_priced_once():
    doc = json.loads(run("run", "pqc-tpm", "--profiles", "st-st33ktpm2xspi-wolftpm,st-st33ktpm2xspi-wolftpm",
                         "--algorithms", "ML-KEM-768,ML-KEM-768", "--draws", "10", "--json")[1])
    keys = [(r["profile"], r["algorithm"], r["operation"]) for r in doc["rows"]]
    assert keys and len(keys) == len(set(keys))


def test_profile_builder_help_writes_nothing(tmp_path, capsys):
    """`tools/build_pqc_profiles.py --help` used to ignore its arguments and rewrite every profile."""
    import runpy
    from pathlib import Path

    main = runpy.run_path(str(Path(__file__).resolve().parents[2] / "tools" / "build_pqc_profiles.py"))["main"]
    main.__globals__["OUT"] = tmp_path / "pqc"
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0 and "companion profiles" in capsys.readouterr().out
    assert not (tmp_path / "pqc").exists()


@pytest.mark.parametrize("mean, message", [
    ("1.7e308", "component 'ohc': costs above 1e+12 ms"),  # refused by the profile loader (timing/profile.py)
    ("1e10", "component ohc = 1e+10 ms is beyond any chip"),  # loads, refused by pqc-tpm's own bound
])
def test_a_profile_with_absurd_costs_is_a_one_line_error(tmp_path, capsys, mean, message):
    toml = tmp_path / "huge.toml"
    toml.write_text('name = "qa-huge"\nfamily = "tpm2"\nversion = "1"\ndescription = "d"\n'
                    '[provenance]\nsource = "s"\ntable = "-"\nnote = "-"\n'
                    f'[components.ohc]\nmean = {mean}\nunit = "call"\nsource = "s"\ntable = "-"\nnote = "-"\n')
    rc, out, err = run("run", "pqc-tpm", "--profiles", str(toml), "--draws", "10")
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1


def test_a_calibrated_sign_row_names_the_commands_its_figure_covers():
    """On SEALSQ the sign figure is wolfTPM bench's SignSequenceStart + SignSequenceComplete, not one SignDigest;
    the served draws are SignDigest's. The sign-sequence row adds only the updates (its Start is in that figure)."""
    rc, out, err = run("run", "pqc-tpm", "--profiles", "sealsq-qvault-pqc-tpm-wolftpm,st-st33ktpm2xspi-wolftpm",
                       "--algorithms", "ML-DSA-65", "--draws", "10", "--json")
    assert rc == 0, err
    rows = {(r["profile"], r["operation"]): r for r in json.loads(out)["rows"] if r["profile"]}
    sealsq = rows[("sealsq-qvault-pqc-tpm-wolftpm", "sign")]
    assert sealsq["calibrated"] and sorted(sealsq["commands"]) == ["TPM2_SignSequenceComplete",
                                                                    "TPM2_SignSequenceStart"]
    assert sealsq["served_commands"] == ["TPM2_SignDigest"]
    assert sealsq["median_ms"] == pytest.approx(581.0, rel=1e-6)  # reference: wolfTPM docs, the published mean
    assert rows[("sealsq-qvault-pqc-tpm-wolftpm", "keygen")]["commands"] == ["TPM2_CreatePrimary", "TPM2_FlushContext"]
    st = rows[("st-st33ktpm2xspi-wolftpm", "sign")]
    assert not st["calibrated"] and st["commands"] == st["served_commands"] == ["TPM2_SignDigest"]
    assert sealsq["basis"] == "calibration" and st["basis"] == "model"
    seq = rows[("sealsq-qvault-pqc-tpm-wolftpm", "sign-sequence")]  # the published sign plus modelled updates
    assert seq["basis"] == "extrapolated from calibration" and not seq["calibrated"]
    assert seq["low_ms"] <= seq["median_ms"] <= seq["high_ms"]


def test_rows_extrapolated_from_a_published_figure_say_so():
    """SEALSQ publishes ML-DSA-65 and ML-KEM-768 figures (silicon.toml); ML-DSA-44/87, ML-KEM-1024 and every load
    (from verify / encapsulate) are extrapolated from them: basis says so, calibrated is false, the text agrees."""
    from trustlab.devices.tpm2.pqc_model import silicon

    name = "sealsq-qvault-pqc-tpm-wolftpm"
    rc, out, err = run("run", "pqc-tpm", "--profiles", name, "--draws", "10", "--json")
    assert rc == 0, err
    published = {(r.algorithm, "keygen" if r.call == "create" else r.call) for r in silicon.rows(name)}
    rows = [r for r in json.loads(out)["rows"] if r["profile"] == name and r["operation"] != "sign-sequence"]
    assert rows and published
    for r in rows:
        exact = (r["algorithm"], r["operation"]) in published
        assert r["basis"] == ("calibration" if exact else "extrapolated from calibration"), r
        assert r["calibrated"] is exact
    assert any(r["operation"] == "load" for r in rows) and any(r["algorithm"] == "ML-DSA-87" for r in rows)
    rc, text, err = run("run", "pqc-tpm", "--profiles", name, "--focus", name, "--draws", "10")
    assert rc == 0, err
    lines = text.splitlines()
    assert any(line.split()[:2] == ["ML-DSA-87", "sign"] and "(extrapolated from calibration)" in line
               for line in lines), text
    assert any(line.split()[:2] == ["ML-DSA-65", "sign"] and "(calibration)" in line and "extrapolated" not in line
               for line in lines), text


def test_provenance_is_said_once_and_every_string_resolves(result):
    """--json keeps each distinct piece of provenance once (data["provenance"], keyed p1, p2, ...); a row names its
    pieces by key and "; ".join of their texts is its full provenance string (4.7 MB of repeats before)."""
    from trustlab.shared_provenance import expand, resolve

    table = result["provenance"]
    assert len(set(table.values())) == len(table)  # each text once
    for r in result["rows"]:
        text = resolve(table, r["provenance"])
        assert text.split(": ", 1)[0] in ("create", "keygen", "sign", r["operation"]), text[:80]  # "OP: ..."
    for fact in result["chips"]:
        for refs in fact.get("unit_costs", {}).values():
            assert resolve(table, refs)
    full = expand(result)
    assert "provenance" not in full and all(isinstance(r["provenance"], str) for r in full["rows"])
    assert all(isinstance(c["source"], str) and isinstance(c["note"], str) for c in full["validation"])


def test_the_record_describes_what_the_run_priced(tmp_path):
    """A --chip run's description (the report's caption) names its chip and ML-KEM-512, not 'every TPM 2.0 profile'."""
    saved = tmp_path / "r.json"
    rc, out, err = run("run", "pqc-tpm", "--chip", "core=cortex-m0plus,mhz=133", "--draws", "10", "--save", str(saved))
    assert rc == 0, err
    description = json.loads(saved.read_text())["meta"]["description"]
    assert "every TPM 2.0 profile" not in description and "ML-KEM-512" in description
    assert "--chip (cortex-m0plus @ 133 MHz)" in description
    rc, out, err = run("run", "pqc-tpm", "--draws", "10", "--algorithms", "ML-DSA-65", "--save", str(saved), "--force")
    assert rc == 0, err
    description = json.loads(saved.read_text())["meta"]["description"]
    assert description.startswith("ML-DSA-65 ") and "every TPM 2.0 profile: keygen, sign, verify" in description
