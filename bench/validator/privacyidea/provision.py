"""Provision a benchmark privacyIDEA instance: users and one TOTP token each.

Runs with the venv's python and PRIVACYIDEA_CONFIGFILE pointing at the instance's pi.cfg,
after `pi-manage setup create_tables` and `pi-manage config resolver create_internal`
made the internal SQL resolver RESOLVER (table users_RESOLVER) and the realm REALM.

    python provision.py SEEDS COUNT RESOLVER REALM

Users go into the resolver's table in one transaction (that table is plain data).
Tokens go through privacyIDEA's own init_token(), exactly as /token/init would store
them: seed encrypted with the instance's encKey, token bound to user and realm, TOTP
SHA1, 6 digits, 30 s step, the default time window and failure counter settings.
"""

import os
import sys
import time


def read_seeds(path, count):
    seeds = []
    with open(path, encoding="ascii") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            user, seed_hex, _uri = line.rstrip("\n").split("\t")
            seeds.append((user, seed_hex))
            if len(seeds) == count:
                break
    if len(seeds) < count:
        sys.exit(f"{path} has {len(seeds)} users, {count} were asked for")
    return seeds


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    seeds_path, count, resolver, realm = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    seeds = read_seeds(seeds_path, count)

    from sqlalchemy import event, text
    from privacyidea.app import create_app
    from privacyidea.lib.token import init_token
    from privacyidea.lib.user import User
    from privacyidea.models import db

    app = create_app(config_name="production", config_file=os.environ["PRIVACYIDEA_CONFIGFILE"],
                     silent=True)
    with app.app_context():
        # Provisioning is not measured: let SQLite skip fsync and keep its journal in memory
        # for this process only (neither setting is stored in the database file).
        @event.listens_for(db.engine, "connect")
        def fast_sqlite(dbapi_connection, _record):
            dbapi_connection.execute("PRAGMA synchronous=OFF")
            dbapi_connection.execute("PRAGMA journal_mode=MEMORY")

        db.engine.dispose()
        started = time.monotonic()
        db.session.execute(text(f"INSERT INTO users_{resolver} (username, givenname) VALUES (:u, :u)"),
                           [{"u": user} for user, _ in seeds])
        db.session.commit()
        for i, (user, seed_hex) in enumerate(seeds, 1):
            init_token({"type": "totp", "serial": f"TOTP-{user}", "otpkey": seed_hex,
                        "otplen": 6, "hashlib": "sha1", "timeStep": 30},
                       user=User(user, realm))
            if i % 1000 == 0:
                print(f"provision: {i}/{count} tokens ({time.monotonic() - started:.0f} s)",
                      file=sys.stderr)
        print(f"provision: {count} users with a TOTP token each in "
              f"{time.monotonic() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
