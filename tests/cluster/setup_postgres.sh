#!/usr/bin/env bash
# PostgreSQL for the cluster tests (tests/cluster/) and `make demo-cluster`: the tests
# start private servers of their own (host/testing/postgres.py), never Debian's cluster
# on 5432. This script only makes sure the binaries and the unprivileged user `wkpg`
# (initdb refuses to run as root) are there. Does nothing when they are; otherwise, as
# root, one `apt-get update` and one install of Debian's postgresql package.
set -euo pipefail

did=()

have_initdb() {
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

need_root() {
    if [ "$(id -u)" != "0" ]; then
        echo "$1 and this is not root: as root, run bash tests/cluster/setup_postgres.sh" \
             "(or apt-get install postgresql, and useradd --system wkpg)" >&2
        exit 1
    fi
}

if ! have_initdb; then
    need_root "PostgreSQL is missing"
    export DEBIAN_FRONTEND=noninteractive
    # Debian's package starts its own cluster on 5432 when installed; a policy-rc.d that
    # says "no" keeps it down (the tests never use it). Ours only if none was there.
    policy=/usr/sbin/policy-rc.d
    ours=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && ours=1
    fi
    trap '[ "$ours" = 1 ] && rm -f "$policy"' EXIT
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    have_initdb || { echo "postgresql installed but no initdb under /usr/lib/postgresql" >&2; exit 1; }
    did+=("installed Debian's postgresql")
fi

if [ "$(id -u)" = "0" ] && ! id -u wkpg >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin wkpg
    did+=("created the system user wkpg")
fi

if [ ${#did[@]} -gt 0 ]; then
    echo "== setup_postgres: $(IFS=';'; echo "${did[*]}" | sed 's/;/, /g')"
fi
