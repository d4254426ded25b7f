# The securotp half of bench/push/run.sh (sourced from it; uses its variables and helpers).
#
# securotpd on its own SQLite store (durable, as in production: synchronous=FULL), plain HTTP on
# 127.0.0.1, rate limits off (all load comes from one host credential and a few users).
# Credentials: one admin (enrolls the devices over the API), one host "benchhost".
# PUSH_SECUROTPD=standin runs bench/push/standin.py instead: a dry run of the harness whose rows
# are labelled dryrun-standin and are never securotpd's numbers.

SECUROTPD_PEER=securotpd
[ "$PUSH_DEVICE" = web ] && SECUROTPD_PEER=securotpd-web
case $SECUROTPD_MODE in
    skip) SECUROTPD_NOTE="not measured (PUSH_SECUROTPD=skip)" ;;
    standin) SECUROTPD_PEER=dryrun-standin
             SECUROTPD_NOTE="dry run: bench/push/standin.py (in-memory Python) played securotpd; NOT securotpd's numbers" ;;
    *)
        if [ ! -x "$SECUROTPD_BIN" ] || [ ! -x "$SECUROTP_CLI" ]; then
            SECUROTPD_NOTE="not yet run: securotpd not built ($SECUROTPD_BIN, $SECUROTP_CLI)"
        fi
        ;;
esac
if [ -n "$SECUROTPD_NOTE" ] && [ "$SECUROTPD_MODE" = require ]; then
    die "PUSH_SECUROTPD=require but securotpd is $SECUROTPD_NOTE"
fi

if [ -z "$SECUROTPD_NOTE" ] || [ "$SECUROTPD_MODE" = standin ]; then
    dir=$RUN/$SECUROTPD_PEER
    mkdir -p "$dir"
    chmod 0700 "$dir"
    if [ "$SECUROTPD_MODE" = standin ]; then
        openssl rand -hex 16 >"$dir/admin.cred"
        openssl rand -hex 16 >"$dir/host.cred"
        python3 "$HERE/standin.py" --port "$PORT_SECUROTPD" --host-name benchhost --ready-file "$dir/ready" 2>"$dir/standin.log" &
        SECUROTPD_PID=$!
        STARTED_PIDS+=("$SECUROTPD_PID")
    else
        "$SECUROTP_CLI" --state-dir "$dir/state" admin add bench --output "$dir/admin.cred" >/dev/null ||
            die "securotp admin add failed"
        "$SECUROTP_CLI" --state-dir "$dir/state" host add benchhost --output "$dir/host.cred" >/dev/null ||
            die "securotp host add failed"
        {
            printf 'listen = 127.0.0.1:%s\nrate_limit_host = 0\nrate_limit_user = 0\nlog_level = warning\nmetrics = no\n' "$PORT_SECUROTPD"
            # One device answers every measured login, and the phone page enrolls and opens
            # sessions from one address: the per-device and per-address limits (60 a minute)
            # would answer 429 within the first minute. The bench measures latency, not limits.
            printf 'rate_limit_device = 0\nrate_limit_web = 0\n'
            printf 'state_dir = %s\nkey_file = %s\n' "$dir/state" "$dir/state/securotp.key"
            # push_waiters (default 10000) counts every long-poll: the waiting logins' plus the
            # devices' and the measured login's, a few more than PUSH_WAITING.
            printf 'push_waiters = %s\n' "$(( WAITING + 100 > 10000 ? WAITING + 100 : 10000 ))"
            # Phones' passkeys (PUSH_DEVICE=web) sign at this origin (docs/push.md).
            printf 'public_url = http://localhost:%s\n' "$PORT_SECUROTPD"
        } >"$dir/securotpd.conf"
        chmod 600 "$dir/securotpd.conf"
        note "securotpd: starting on 127.0.0.1:$PORT_SECUROTPD"
        # Waiting logins are open connections: the daemon gets the file limit it would need in production.
        ( ulimit -n "$(ulimit -Hn)"; exec "$SECUROTPD_BIN" --config "$dir/securotpd.conf" ) 2>"$dir/securotpd.log" &
        SECUROTPD_PID=$!
        STARTED_PIDS+=("$SECUROTPD_PID")
    fi
    wait_http "http://127.0.0.1:$PORT_SECUROTPD/v1/health" 60 || die "$SECUROTPD_PEER did not answer on 127.0.0.1:$PORT_SECUROTPD ($dir)"
    # Does it serve the push routes yet? An unknown route is 404; a known one refuses the empty body.
    status=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$dir/host.cred")" \
        -H 'Content-Type: application/json' -d '{}' "http://127.0.0.1:$PORT_SECUROTPD/v1/push")
    if [ "$status" = 404 ]; then
        SECUROTPD_NOTE="not yet run: this securotpd does not serve POST /v1/push (404)"
        [ "$SECUROTPD_MODE" = require ] && die "PUSH_SECUROTPD=require but $SECUROTPD_NOTE"
        note "securotpd: $SECUROTPD_NOTE"
    else
        pam_args=()
        if [ "$PAM_LOGINS" -gt 0 ] && [ "$SECUROTPD_MODE" != standin ] && [ -x "$PAM_CHECK" ] && [ -f "$SECUROTP_MODULE" ]; then
            # The whole PAM path: real libpam loads the module in remote mode; pam-check answers
            # the push prompt with an empty line. The user must exist for libpam and NSS.
            id securotp-bench >/dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin securotp-bench ||
                die "cannot create the user securotp-bench"
            mkdir -p "$dir/pam.d" "$dir/host-state"
            chmod 0700 "$dir/host-state"
            echo "auth required $SECUROTP_MODULE state_dir=$dir/host-state validator=http://127.0.0.1:$PORT_SECUROTPD host_credential=$dir/host.cred" \
                >"$dir/pam.d/securotp-push-bench"
            pam_args=(--pam-check "$PAM_CHECK" --pam-confdir "$dir/pam.d" --pam-service securotp-push-bench
                      --pam-user securotp-bench --pam-logins "$PAM_LOGINS")
        elif [ "$PAM_LOGINS" -gt 0 ] && [ "$SECUROTPD_MODE" != standin ]; then
            note "securotpd: no pam-check or module ($PAM_CHECK, $SECUROTP_MODULE): the whole-PAM phase is skipped"
        fi
        note "$SECUROTPD_PEER: $WARMUP + $PUSH_LOGINS logins one at a time; ${pam_args:+$PAM_LOGINS through libpam; }then $WAITING waiting logins and $LOAD_LOGINS logins while they wait"
        python3 "$HERE/securotp_push.py" --url "http://127.0.0.1:$PORT_SECUROTPD" --admin-cred "$dir/admin.cred" \
            --host-cred "$dir/host.cred" --host-name benchhost --pid "$SECUROTPD_PID" --out "$RUN" \
            --logins "$PUSH_LOGINS" --warmup "$WARMUP" --waiting "$WAITING" --load-logins "$LOAD_LOGINS" \
            --peer "$SECUROTPD_PEER" --device "$PUSH_DEVICE" --origin "http://localhost:$PORT_SECUROTPD" \
            "${pam_args[@]}" >>"$RESULTS" ||
            die "the $SECUROTPD_PEER push measurement failed (log: $dir/)"
        [ -n "$SECUROTPD_NOTE" ] || SECUROTPD_NOTE="measured"
    fi
    stop_pid "$SECUROTPD_PID"
fi
