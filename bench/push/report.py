"""bench/push/out/results.md from run/results.txt (one key=value line per measured phase)."""

import argparse
import time


def parse(path):
    rows = []
    with open(path) as f:
        for line in f:
            kv = dict(w.split("=", 1) for w in line.split() if "=" in w)
            if kv:
                rows.append(kv)
    return rows


def num(row, key, digits=1):
    v = row.get(key) if row else None
    return "–" if v is None else f"{float(v):.{digits}f}"


def main():
    ap = argparse.ArgumentParser()
    for a in ("results", "out", "host", "load", "privacyidea", "securotpd-note", "elapsed"):
        ap.add_argument("--" + a, default="")
    args = ap.parse_args()
    rows = parse(args.results)
    pi = next((r for r in rows if r.get("peer") == "privacyidea"), None)
    dry = any(r.get("peer", "").startswith("dryrun") for r in rows)
    ours = [r for r in rows if r.get("peer") in ("securotpd", "securotpd-web", "dryrun-standin")]
    # The targets are the authenticator's (issue 14); a phone's passkey (PUSH_DEVICE=web) gets rows of its own.
    phase = {r.get("phase"): r for r in ours if r.get("peer") != "securotpd-web"}
    out = []
    w = out.append
    w("# Push benchmark results")
    w("")
    w(f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; host: {args.host}")
    w(f"- Load average before/after: {args.load}")
    if args.privacyidea:
        w(f"- {args.privacyidea}; its PAM client polls /validate/polltransaction every 0.5 s as privacyidea-pam does")
    w(f"- securotpd: {args.securotpd_note or 'not measured'}")
    w(f"- Measurement took {args.elapsed} s. Raw samples: bench/push/out/run/*.samples")
    w("")
    w("## Approve → login returns (ms)")
    w("")
    w("From just before the device's (phone's) answer is sent to the login completing: privacyIDEA's final "
      "`/validate/check` answering ACCEPT; securotp's host having verified the approval and reported it "
      "(`host`), or `pam_authenticate` returning in pam-check (`pam`). `wait` = securotp's `/v1/push/wait` "
      "returning the approval. Logins one at a time unless stated.")
    w("")
    w("| peer | phase | logins | p50 | p99 | mean | max | wait p50 | wait p99 |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    if pi:
        w(f"| privacyIDEA push (poll only) | client polls every 0.5 s | {pi['logins']} | {num(pi, 'p50_ms')} | "
          f"{num(pi, 'p99_ms')} | {num(pi, 'mean_ms')} | {num(pi, 'max_ms')} | | |")
    names = {"idle": "host, nothing else waiting", "pam": "pam (libpam + pam_securotp)",
             "load": "host, {} logins waiting"}
    order = {"idle": 0, "pam": 1, "load": 2}
    for r in sorted(ours, key=lambda r: (r.get("peer") == "securotpd-web", order.get(r.get("phase"), 3))):
        ph = r.get("phase")
        if ph not in names:
            continue
        if r.get("missing"):
            w(f"| {r['peer']} | {names[ph]} | not run: {r['missing']} | | | | | | |")
            continue
        w(f"| {r['peer']} | {names[ph].format(r.get('waiting', '?'))} | {r['logins']} | {num(r, 'p50_ms', 2)} | "
          f"{num(r, 'p99_ms', 2)} | {num(r, 'mean_ms', 2)} | {num(r, 'max_ms', 2)} | {num(r, 'wait_p50_ms', 2)} | "
          f"{num(r, 'wait_p99_ms', 2)} |")
    if not ours:
        w("| securotpd | – | not yet run | | | | | | |")
    load = phase.get("load")
    if load:
        w("")
        w("## Waiting logins")
        w("")
        waiting = int(load.get("waiting", 0)) or 1
        per = (float(load["rss_waiting_mb"]) - float(load["rss_before_mb"])) * 1024 / waiting
        w("| waiting | RSS before (MB) | RSS with them waiting (MB) | per waiting login (KiB) | peak RSS (MB) | "
          "threads before / waiting | CPU while they wait (% of one core, 10 s) | opening them (s) | expired / reopened / errors |")
        w("|---:|---:|---:|---:|---:|---|---:|---:|---|")
        w(f"| {load['waiting']} | {num(load, 'rss_before_mb')} | {num(load, 'rss_waiting_mb')} | {per:.1f} | "
          f"{num(load, 'rss_hwm_mb')} | {load.get('threads_before')} / {load.get('threads_waiting')} | "
          f"{num(load, 'idle_cpu_pct', 2)} | {num(load, 'open_s')} | {load.get('expired')} / "
          f"{load.get('reopened')} / {load.get('errors')} |")
    w("")
    w("## Targets")
    w("")
    best = phase.get("pam") if phase.get("pam", {}).get("p50_ms") else phase.get("idle")
    if dry:
        w("- Dry run (stand-in validator): no target applies.")
    elif not best:
        w("- p50 ≤ 50 ms, ≥ 5× lower than privacyIDEA, 10,000 waiting logins < 200 MB: **not yet measured** "
          f"(securotpd: {args.securotpd_note or 'not run'})")
    else:
        which = "through libpam" if best.get("phase") == "pam" else "host side (no whole-PAM phase)"
        p50 = float(best["p50_ms"])
        w(f"- p50 ≤ 50 ms ({which}): {p50:.2f} ms — {'met' if p50 <= 50 else '**not met**'}")
        if pi:
            ratio = float(pi["p50_ms"]) / p50
            w(f"- ≥ 5× lower p50 than privacyIDEA ({float(pi['p50_ms']):.1f} ms): {ratio:.0f}× — "
              f"{'met' if ratio >= 5 else '**not met**'}")
        if load:
            rss = float(load["rss_waiting_mb"])
            ok = rss < 200 and int(load.get("waiting", 0)) >= 10000 and load.get("errors") == "0"
            w(f"- {load['waiting']} waiting logins in < 200 MB: {rss:.1f} MB RSS, {load.get('errors')} errors — "
              f"{'met' if ok else '**not met**'}; approve → return p99 with them waiting: {num(load, 'p99_ms', 2)} ms")
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
