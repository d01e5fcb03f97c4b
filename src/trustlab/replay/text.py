"""The replay's tables for people, and its plot of workload time per chip."""

from __future__ import annotations

from typing import Any

from trustlab.textable import table


def render(result: dict[str, Any]) -> str:
    rows = result["profiles"]
    out = [f"Replay of {result['trace']}: {result['commands']} commands from {result['clients']} client(s); "
           f"clients' own time {result['client_ms']:.1f} ms (recorded, replayed as is); bus = the chip's bus time for "
           "the bytes moved (chips.toml); "
           f"{result['draws']} draws of the spreads, seed {result['seed']}", ""]
    body = []
    for r in rows:
        top = ", ".join(f"{short_cmd(t['command'])} {100 * t['share']:.0f}%" for t in r["top"][:3] if t["share"])
        body.append([r["profile"], r["tpm_median_ms"], r["tpm_p95_ms"], r["wall_ms"],
                     None if r["bus_share"] is None else 100 * r["bus_share"], top,
                     len(r["cannot_price"]) or ""])
    out += ["TPM time per chip (ms; wall = mean TPM time + the clients' own time, queued on one chip):",
            table(body, ["profile", "median ms", "p95 ms", "wall ms", "bus %", "top commands (share)",
                         "not fully priced"]), ""]
    over = [r["profile"] for r in rows if r.get("bus_exceeds_priced")]
    if over:
        out += ["The bus time of the bytes moved (chips.toml) exceeds the whole priced TPM time on "
                f"{', '.join(over)}: the profile charges no per-byte cost, so its total is low for this workload's "
                "frames (bus % shown as 100).", ""]
    notes = [[r["profile"], n["command"], n["variant"] or "", n["count"], n["note"]]
             for r in rows for n in r["cannot_price"]]
    if notes:
        out += ["Commands a profile cannot (fully) price (as `trustlab estimate` marks them; their totals are "
                "lower bounds):", table(notes, ["profile", "command", "variant", "count", "note"]), ""]
    unfit = [[r["profile"], r["max_command_size"], sum(u["count"] for u in r["does_not_fit"]),
              ", ".join(f"{short_cmd(u['command'])}{' (' + u['variant'] + ')' if u['variant'] else ''} "
                        f"{u['frame']} {u['bytes']} B"
                        for u in sorted(r["does_not_fit"], key=lambda u: -u["bytes"])[:3])
              + (", ..." if len(r["does_not_fit"]) > 3 else "")]
             for r in rows if r.get("does_not_fit")]
    if unfit:
        out += ["Does not fit: commands whose frame exceeds the chip's buffer (TPM_PT_MAX_COMMAND_SIZE = "
                "MAX_RESPONSE_SIZE, chips.toml); such a chip answers them TPM_RC_COMMAND_SIZE / TPM_RC_SIZE, so the "
                "workload cannot run there as recorded (--json: does_not_fit lists every command and frame):",
                table(unfit, ["profile", "limit B", "commands", "largest frames (command, frame, bytes)"]), ""]
    if result.get("pqc"):
        label = ", ".join(v for v in result["pqc"].values() if v)
        body = []
        for r in rows:
            q = r["pqc"]
            ratio = q["median_ms"] / r["tpm_median_ms"] if r["tpm_median_ms"] > 0 else None
            body.append([r["profile"], r["tpm_median_ms"], q["median_ms"], q["low_ms"], q["high_ms"], ratio,
                         None if q["bus_share"] is None else 100 * q["bus_share"],
                         ", ".join(short_cmd(x) for x in q["not_fitting"]) or "-"])
        out += [f"Post-quantum what-if ({label}): classical median vs post-quantum central estimate and 5-95% "
                "interval of the PQC cost model (the same prices as `trustlab run pqc-tpm`); commands whose frame "
                "exceeds the chip's TPM_PT_MAX_COMMAND_SIZE (rewritten or recorded):",
                table(body, ["profile", "classical ms", "PQC ms", "low", "high", "x", "bus %", "does not fit"]), ""]
        first = rows[0]["pqc"]["rewritten"] if rows else []
        if rows and not first:
            out += ["Nothing to rewrite: no command of the trace uses an RSA/ECC signing or decryption key (a trace "
                    "of post-quantum commands is priced as recorded above, on every chip).", ""]
        if first:
            out += [f"Rewritten commands on {rows[0]['profile']}:",
                    table([[g["command"], g["variant"], g["becomes"], g["count"], g["median_ms"], g["low_ms"],
                            g["high_ms"], g["in_bytes"], g["out_bytes"], "yes" if g["fits"] else "NO"]
                           for g in first],
                          ["command", "key", "becomes", "count", "ms each", "low", "high", "in B", "out B", "fits"]),
                    ""]
    return "\n".join(out)


def short_cmd(name: str) -> str:
    return name.removeprefix("TPM2_")


def plot(result: dict[str, Any], title: str | None = None) -> dict[str, Any]:
    """Bars of the workload's TPM time per chip (median; post-quantum central estimate beside it)."""
    rows = result["profiles"]
    # a profile that cannot price every command gives a lower bound: marked, so its short bar is not read as fast
    # a chip whose buffer the trace's frames exceed cannot run the workload as recorded: marked "!"
    x = [r["profile"] + (" *" if r["cannot_price"] else "") + (" !" if r.get("does_not_fit") else "") for r in rows]
    series = [{"label": "classical (median)", "x": x, "y": [max(r["tpm_median_ms"], 0.0) for r in rows]}]
    if result.get("pqc"):
        label = ", ".join(v for v in result["pqc"].values() if v)
        series.append({"label": f"post-quantum ({label})", "x": x, "y": [r["pqc"]["median_ms"] for r in rows]})
    marked = any(r["cannot_price"] for r in rows)
    unfit = any(r.get("does_not_fit") for r in rows)
    title = title or f"Workload time per chip: {result['trace']}"
    return {"kind": "bar", "title": title + (" (* not fully priced: a lower bound)" if marked else "")
            + (" (! frames exceed the chip's buffer)" if unfit else ""),
            "xlabel": "TPM 2.0 profile",
            "ylabel": "ms (log)", "logx": False, "logy": True, "series": series}
