"""Writes BENCHMARKS.md from scripts/bench-compare's raw results (a TSV of runs).

    report.py --results results.tsv [--inprocess inprocess.txt] --runs N --output BENCHMARKS.md

Rows: "meta KEY VALUE", "grants TARGET/IN_FLIGHT CONTENDER RUN COUNT SECONDS",
"idtokens ALG CONTENDER RUN COUNT SECONDS", "accesstokens ALG CONTENDER RUN COUNT SECONDS",
"introspection cached swift-oauth2 RUN COUNT SECONDS" (each of these two with the process's CPU seconds after),
"cli cached CONTENDER RUN COUNT SECONDS",
"cliparallel dot swift-oauth2 RUN REFRESHES FAILURES DISTINCT". A rate is COUNT / SECONDS
of one run; tables give the median rate, the min–max over the runs, and the ratio of the
medians to swift-oauth2's.
"""
import argparse
import os
import statistics
from collections import OrderedDict, defaultdict

parser = argparse.ArgumentParser()
parser.add_argument("--results", required=True)
parser.add_argument("--inprocess")
parser.add_argument("--runs", type=int, default=5)
parser.add_argument("--output", required=True)
parser.add_argument("--quick", action="store_true")
parser.add_argument("--extra", help="a Markdown file appended as it is (profiling notes)")
args = parser.parse_args()

meta = {}
runs = defaultdict(lambda: OrderedDict())  # (part, case) -> contender -> [values]
cpu_runs = defaultdict(lambda: OrderedDict())  # the same per CPU second, where a contender gives its CPU time
parallel = []
with open(args.results) as f:
    for line in f:
        cols = line.rstrip("\n").split("\t")
        if cols[0] == "meta":
            meta[cols[1]] = cols[2] if len(cols) > 2 else ""
        elif cols[0] == "cliparallel":
            parallel.append(tuple(int(c) for c in cols[4:7]))
        else:
            part, case, who, _run, count, seconds = cols[:6]
            count, seconds = float(count), float(seconds)
            runs[(part, case)].setdefault(who, []).append(count / seconds if seconds > 0 else 0.0)
            if len(cols) > 6 and float(cols[6]) > 0:
                cpu_runs[(part, case)].setdefault(who, []).append(count / float(cols[6]))


def fmt(rate):
    if rate >= 100:
        return "{:,.0f}".format(rate)
    if rate >= 10:
        return "{:.1f}".format(rate)
    return "{:.2f}".format(rate)


def fmt_ms(rate):
    return "{:.1f}".format(1000.0 / rate) if rate > 0 else "failed"


def table(case_runs, ours, unit, names, time_per=False):
    """Rows: contender | median | min–max | ratio of the medians to ours (ours ÷ theirs)."""
    out = []
    if time_per:
        out.append("| contender | median ms per process | min–max ms | swift-oauth2 is … × faster |")
    else:
        out.append("| contender | median %s | min–max | ratio to swift-oauth2 (theirs ÷ ours) |" % unit)
    out.append("|---|---:|---:|---:|")
    base = statistics.median(case_runs[ours]) if ours in case_runs else None
    for who, values in case_runs.items():
        med = statistics.median(values)
        failed = any(v == 0 for v in values)
        if time_per:
            lo, hi = fmt_ms(max(values)), fmt_ms(min(values))
            ratio = "{:.1f}×".format(base / med) if base and med else "—"
            out.append("| %s | %s | %s–%s | %s |" % (names.get(who, who), fmt_ms(med), lo, hi, "(ours)" if who == ours else ratio))
        else:
            ratio = "{:.2f}".format(med / base) if base else "—"
            cell = fmt(med) + (" (some runs failed)" if failed else "")
            out.append("| %s | %s | %s–%s | %s |" % (names.get(who, who), cell, fmt(min(values)), fmt(max(values)), "1.00 (ours)" if who == ours else ratio))
    return "\n".join(out)


NAMES = {
    "swift-ahc": "swift-oauth2, AsyncHTTPClientTransport",
    "swift-ahc-nio": "swift-oauth2, AsyncHTTPClientTransport, NIO as the global executor",
    "swift-urlsession": "swift-oauth2, URLSessionTransport",
    "go-x-oauth2": "Go golang.org/x/oauth2 (clientcredentials)",
    "python-authlib": "Python authlib (requests)",
    "curl": "curl (one process, keep-alive)",
    "swift-oauth2": "swift-oauth2 (IDTokenValidator)",
    "swift-crypto-raw": "swift-crypto signature check alone (the floor)",
    "python-joserfc": "Python joserfc (authlib's JOSE)",
    "python-pyjwt": "Python PyJWT",
}

md = []
md.append("# Benchmarks")
md.append("")
md.append("Written by `scripts/bench-compare` (do not edit by hand: run it again). Figures are from one machine at one "
          "time; what they are good for is the comparison between contenders measured in the same run, alternately "
          "(run 1 of each contender, then run 2 of each, …), each after a warm-up.")
if args.quick:
    md.append("")
    md.append("**This is a `--quick` run (1 run, fewer operations): it checks the script works; its figures are not for quoting.**")
md.append("")
md.append("## Machine and run")
md.append("")
for key, label in [("start", "started"), ("end", "ended"), ("cpu", "CPU"), ("memory", "memory"), ("os", "OS"),
                   ("load_start", "load average (1/5/15 min) at the start"), ("load_end", "load average at the end"),
                   ("swift", "Swift"), ("go", "Go"), ("jwtkit", "jwt-kit"), ("curl", "curl"), ("python", "Python"),
                   ("glewlwyd", "Glewlwyd token endpoint"), ("fixed", "fixed-answer token endpoint"), ("dot", "django-oauth-toolkit")]:
    if key in meta:
        md.append("- %s: %s" % (label, meta[key]))
for part in ("grants", "idtokens", "accesstokens", "cli", "inprocess"):
    if "load_" + part in meta:
        md.append("- load average when the %s part started: %s" % (part, meta["load_" + part]))
if "load_note" in meta:
    md.append("- note: " + meta["load_note"])
md.append("- runs per contender: %d (median, min–max over the runs)" % args.runs)
md.append("")
md.append("Regenerate: `OAUTH2_TEST_GLEWLWYD_PORT=… scripts/bench-compare` (installs what it needs; see the script's header). "
          "The in-process benchmarks alone: `scripts/benchmarks`.")

grant_cases = [(c, w) for (p, c), w in runs.items() if p == "grants"]
if grant_cases:
    md.append("")
    md.append("## client_credentials grants (round trips per second)")
    md.append("")
    md.append("Each contender asks for a token with `grant_type=client_credentials` and HTTP Basic client "
              "authentication, again and again, keeping its connections alive: swift-oauth2's `OAuth2Client.clientCredentials(scopes:)` "
              "through each transport (`Benchmarks/Compare/BenchClient`; the AsyncHTTPClient one a second time in a process that "
              "made NIO's event loops Swift concurrency's global executor at start-up, "
              "`NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()`, an application's "
              "choice that a library cannot make), Go's `clientcredentials.Config.Token` "
              "(`Benchmarks/Compare/go`), authlib's `OAuth2Session.fetch_token` (`Benchmarks/Compare/python/grants_authlib.py`), "
              "and curl (one process, `curl -K` with the URL listed once per request; `--parallel --parallel-max 32` for 32 in flight). "
              "Every contender parses the JSON answer but curl, which discards it. 32 in flight: 32 workers (tasks, goroutines, "
              "threads) each taking the next grant.")
    md.append("")
    md.append("Servers: **the fixed-answer endpoint** (`Benchmarks/Compare/FixedTokenEndpoint`: SwiftNIO, one thread, answers every "
              "POST with the same 122-byte token response without reading the form, so the client's own cost shows) and "
              "**Glewlwyd** (a real authorization server that signs an RS256 JWT access token per grant, which caps every client).")
    for target, title in [("fixed", "fixed-answer endpoint"), ("glewlwyd", "Glewlwyd")]:
        for inflight in ("1", "32"):
            case = "%s/%s" % (target, inflight)
            if ("grants", case) not in runs:
                continue
            md.append("")
            md.append("### %s, %s, %s grants per run" % (title, "sequential (1 in flight)" if inflight == "1" else "32 in flight",
                                                   "{:,}".format(int(meta.get("grants_" + target, "0")))))
            md.append("")
            md.append(table(runs[("grants", case)], "swift-ahc", "grants/s", NAMES))

id_cases = [c for (p, c) in runs if p == "idtokens"]
if id_cases:
    md.append("")
    md.append("## ID-token validation (validations per second, one thread)")
    md.append("")
    md.append("The same 2,000 tokens for every contender (written by `Benchmarks/Compare/python/idtokens.py make`, signed with a "
              "new key each run of the script: P-256, RSA 2048), each iteration the next token, the JWK set in hand. Each "
              "contender checks the signature, iss, aud, exp, iat, nonce and at_hash. swift-oauth2: "
              "`IDTokenValidator.validate(_:keys:expecting:now:)`; the floor is swift-crypto's signature check on the same tokens "
              "with nothing else (base64url decoding done beforehand).")
    for alg in ("ES256", "RS256"):
        if ("idtokens", alg) in runs:
            md.append("")
            md.append("### " + alg)
            md.append("")
            md.append(table(runs[("idtokens", alg)], "swift-oauth2", "validations/s", NAMES))

access_cases = [c for (p, c) in runs if p == "accesstokens"]
if access_cases or ("introspection", "cached") in runs:
    md.append("")
    md.append("## Access-token validation (resource server)")
    md.append("")
    md.append("Validations per second, one thread. The same 2,000 RFC 9068 JWT access tokens per algorithm for every contender "
              "(written by `Benchmarks/Compare/python/accesstokens.py make`, new keys each run of the script: P-256, RSA 2048; "
              "header `typ` at+jwt and `kid`; claims iss, sub, aud, exp, iat, nbf, jti, client_id, scope), the JWK set in hand "
              "(three keys; each token names its own by `kid`), each iteration the next token. Each contender checks the "
              "signature with the key the `kid` names, `typ` at+jwt, `alg` against an allow-list, iss, aud, exp/nbf/iat with "
              "60 s of leeway, sub, jti and client_id present, and that scope grants `read`. swift-oauth2: "
              "`AccessTokenVerifier.verify(_:requiredScopes:)` with `.fixed(keys)`; jwt-kit: a `JWTKeyCollection` with the set, "
              "a `JWTPayload` checking the claims and a parser checking typ and alg (both in `Benchmarks/Support/AccessTokenContenders`, "
              "run by `bench-resource-server`); Go: golang-jwt v4 `ParseWithClaims` with `WithValidMethods`, typ and kid in the "
              "key function, the claims' `Valid` (`Benchmarks/Compare/go-jwt`); Python: PyJWT `decode` after reading the "
              "header for typ and kid. The floor is swift-crypto's signature check on the same tokens with nothing else "
              "(base64url decoding done beforehand). Goals: ahead of jwt-kit and golang-jwt; ≥ 0.9× the floor for ES256, "
              "≥ 0.85× for RS256.")
    access_names = dict(NAMES)
    access_names.update({"swift-oauth2": "swift-oauth2 (AccessTokenVerifier)", "jwt-kit": meta.get("jwtkit", "vapor/jwt-kit"),
                         "go-golang-jwt": "Go golang-jwt v4 (Debian)", "python-pyjwt": "Python PyJWT"})
    for alg in ("ES256", "RS256"):
        if ("accesstokens", alg) in runs:
            case_runs = runs[("accesstokens", alg)]
            md.append("")
            md.append("### " + alg)
            md.append("")
            md.append("Wall clock:")
            md.append("")
            md.append(table(case_runs, "swift-oauth2", "validations/s", access_names))
            cpu_case = cpu_runs.get(("accesstokens", alg))
            if cpu_case:
                md.append("")
                md.append("Per CPU second (the process's user + system time over the same runs: what the work cost, whatever "
                          "else the machine was doing):")
                md.append("")
                md.append(table(cpu_case, "swift-oauth2", "validations per CPU s", access_names))
            for label, source in (("wall clock", case_runs), ("CPU time", cpu_case or {})):
                if "swift-oauth2" in source and "swift-crypto-raw" in source:
                    md.append("")
                    md.append("swift-oauth2 ÷ the floor, %s: %.2f× (goal %s×)." % (
                        label, statistics.median(source["swift-oauth2"]) / statistics.median(source["swift-crypto-raw"]),
                        "0.9" if alg == "ES256" else "0.85"))
    if ("introspection", "cached") in runs:
        values = runs[("introspection", "cached")]["swift-oauth2"]
        md.append("")
        md.append("### A cached introspection answer")
        md.append("")
        md.append("`TokenIntrospector.verify(_:requiredScopes:)` on 1,000 opaque tokens, each introspected once through a "
                  "transport answering from memory, then checked from the cache again and again (SHA-256 of the token, a "
                  "lock, a dictionary look-up, the expiry and scope checks). Goal: ≤ 1 µs.")
        md.append("")
        md.append("| contender | median µs per check | min–max µs | median CPU µs per check | min–max CPU µs |")
        md.append("|---|---:|---:|---:|---:|")
        cpu_values = cpu_runs.get(("introspection", "cached"), {}).get("swift-oauth2") or [0.0]
        md.append("| swift-oauth2 (TokenIntrospector, cache hit) | %.3f | %.3f–%.3f | %.3f | %.3f–%.3f |" % (
            1e6 / statistics.median(values), 1e6 / max(values), 1e6 / min(values),
            1e6 / statistics.median(cpu_values) if cpu_values[0] else 0, 1e6 / max(cpu_values) if cpu_values[0] else 0,
            1e6 / min(cpu_values) if cpu_values[0] else 0))

if ("cli", "cached") in runs:
    md.append("")
    md.append("## `oauth2 token` with a cached valid token, whole process")
    md.append("")
    md.append("20 processes one after the other per run: `oauth2 token` built as README builds it (release, static Swift "
              "libraries, no URLSession trait; profile with a file store, "
              "DOT password-grant tokens) against `Benchmarks/Compare/python/token_authlib.py`, which does the same: reads a "
              "stored token set, prints the access token if it is valid for another 60 s, else refreshes it with authlib "
              "and saves the rotated refresh token. Goal: ≤ 20 ms and ≥ 3× faster than the Python script.")
    md.append("")
    md.append(table(runs[("cli", "cached")], "swift-oauth2", "", {"swift-oauth2": "`oauth2 token` (release, static)",
                                                                    "python-authlib": "Python authlib script"}, time_per=True))

if parallel:
    md.append("")
    md.append("## 10 `oauth2 token` processes at once on an expired token (DOT, rotating refresh tokens)")
    md.append("")
    md.append("Per run: the stored access token is marked expired, then 10 processes start together. Refreshes are counted "
              "in DOT's database (each refresh of a rotating client stores a new refresh token); a failure is a non-zero exit. "
              "Goal: 1 refresh, 0 failures.")
    md.append("")
    md.append("| run | refreshes at the server | failed processes | distinct tokens printed |")
    md.append("|---:|---:|---:|---:|")
    for i, (refreshes, failures, distinct) in enumerate(parallel, 1):
        md.append("| %d | %d | %d | %d |" % (i, refreshes, failures, distinct))

if args.inprocess and os.path.exists(args.inprocess) and os.path.getsize(args.inprocess) > 0:
    md.append("")
    md.append("## In-process benchmarks (`scripts/benchmarks`, ordo-one/benchmark)")
    md.append("")
    md.append("Goals: `authorize()` on a cached token ≤ 1 µs and no allocation beyond the header value; ID-token "
              "validation ≥ 0.8× the raw signature rate; access-token validation (ResourceServerBenchmarks) ≥ 0.9× the raw "
              "ES256 and ≥ 0.85× the raw RS256 rate, ahead of jwt-kit, and a cached introspection answer ≤ 1 µs; the 10,000-caller burst on an expired token against a server "
              "answering after 5 ms within 2× one round trip, with 1 token request (the benchmark stops if more were "
              "sent); ≤ 1 KB per session beyond the token strings; a fresh token through the PostgreSQL store's in-process "
              "cache ≤ 1 µs, as on a memory store (PostgresBenchmarks; its figures beside pgbench's floor are in the "
              "section after this one). Percentiles as printed by the package (p0 = min).")
    md.append("")
    md.append("```")
    keep = False
    with open(args.inprocess) as f:
        for line in f:
            text = line.rstrip("\n")
            if text.startswith("Build complete") or text.startswith("Building for") or "Compiling" in text:
                continue
            if text.startswith("==") or text.startswith("Host") or keep or text.startswith("Benchmark"):
                keep = True
            if keep:
                md.append(text)
    md.append("```")

if args.extra and os.path.exists(args.extra):
    md.append("")
    with open(args.extra) as f:
        md.append(f.read().rstrip("\n"))

with open(args.output, "w") as f:
    f.write("\n".join(md) + "\n")
