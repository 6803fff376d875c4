#!/bin/sh
# `make install DESTDIR=...` into a temporary root: ringkvd in sbindir,
# ringkv in bindir, the three man pages (rendered without warnings), the
# example config (which the installed ringkvd accepts with --test-config,
# needing exactly the descriptors the unit's LimitNOFILE gives), and the
# systemd unit with its sysusers file, checked by `systemd-analyze verify`
# when that is installed.  `make uninstall` then leaves no file behind.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
root="$IT_DIR/root"

# make: the build tree's Makefile on its own, outside the caller's jobserver.
mk() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "${MAKE:-make}" -s -C "$top_builddir" "$@"
}
var() {
    sed -n "s/^$1 = //p" "$top_builddir/Makefile"
}

mk install DESTDIR="$root" > "$IT_DIR/install.log" 2>&1 || it_fail "make install failed: $(tail -5 "$IT_DIR/install.log")"
(cd "$root" && find . -type f | sort) > "$IT_DIR/files"
it_log "installed:"
sed 's/^\./    /' "$IT_DIR/files"

# has PATTERN WHAT: one installed file matches the pattern (a path in the temporary root).
has() {
    grep -q "$1" "$IT_DIR/files" || it_fail "no $2 installed ($1)"
}
has '/sbin/ringkvd$' "ringkvd in sbindir"
has '/bin/ringkv$' "ringkv in bindir"
has '/share/man/man8/ringkvd\.8$' "ringkvd(8)"
has '/share/man/man5/ringkvd\.conf\.5$' "ringkvd.conf(5)"
has '/share/man/man1/ringkv\.1$' "ringkv(1)"
has '/share/doc/ringkv/examples/ringkvd\.conf$' "example config"
prefix_root="$root$(var prefix)"
installed_sbin=$(sed -n 's|^\.\(.*/sbin/ringkvd\)$|\1|p' "$IT_DIR/files") # as the unit names it
sbin="$root$installed_sbin"
"$sbin" --version | grep -q '^ringkvd ' || it_fail "the installed ringkvd does not run"
"$prefix_root/bin/ringkv" keygen "$IT_DIR/cluster.key" > /dev/null || it_fail "the installed ringkv does not run"

for p in man8/ringkvd.8 man5/ringkvd.conf.5 man1/ringkv.1; do
    MANWIDTH=80 man --warnings -l "$prefix_root/share/man/$p" > "$IT_DIR/page.txt" 2> "$IT_DIR/warn" ||
        it_fail "man -l $p failed"
    [ ! -s "$IT_DIR/warn" ] || it_fail "$p renders with warnings: $(cat "$IT_DIR/warn")"
    [ -s "$IT_DIR/page.txt" ] || it_fail "$p renders empty"
done
it_log "man pages render without warnings"

# The example config, with this test's key, is one the installed node accepts.
sed "s|^cluster-key .*|cluster-key $IT_DIR/cluster.key|" \
    "$prefix_root/share/doc/ringkv/examples/ringkvd.conf" > "$IT_DIR/a.conf"
"$sbin" --config "$IT_DIR/a.conf" --test-config > /dev/null 2> "$IT_DIR/test-config.err" ||
    it_fail "the example config fails --test-config: $(cat "$IT_DIR/test-config.err")"
need=$(sed -n 's/.*it needs \([0-9]*\) file descriptors.*/\1/p' "$IT_DIR/test-config.err")

unitdir=$(var systemdsystemunitdir)
if [ "$unitdir" = no ] || [ -z "$unitdir" ]; then
    it_log "SKIP unit checks: configured without a systemd unit directory"
    it_pass "binaries, man pages and example config installed"
    exit 0
fi
unit="$root$unitdir/ringkvd@.service"
[ -f "$unit" ] || it_fail "no ringkvd@.service in $unitdir"
has '/sysusers\.d/ringkv\.conf$' "sysusers.d file"
grep -qx "ExecStart=$installed_sbin --config /etc/ringkv/%i.conf" "$unit" ||
    it_fail "ExecStart does not name the installed ringkvd: $(grep ExecStart= "$unit")"
for line in User=ringkv StateDirectory=ringkv/%i ProtectSystem=strict NoNewPrivileges=yes \
    Restart=on-failure StandardError=journal "ExecReload=/bin/kill -HUP \$MAINPID"; do
    grep -qxF "$line" "$unit" || it_fail "the unit lacks $line"
done
soft=$(sed -n 's/^LimitNOFILE=\([0-9]*\).*/\1/p' "$unit")
it_expect_eq "LimitNOFILE's soft limit against what the example config needs" "$soft" "$need"

if command -v systemd-analyze > /dev/null; then
    # verify needs an instance, the unit's ExecStart and its Documentation= pages to exist.
    mkdir "$IT_DIR/units"
    sed "s|^ExecStart=$installed_sbin |ExecStart=$sbin |" "$unit" > "$IT_DIR/units/ringkvd@.service"
    ln -s ringkvd@.service "$IT_DIR/units/ringkvd@a.service"
    MANPATH="$prefix_root/share/man" systemd-analyze verify "$IT_DIR/units/ringkvd@a.service" \
        > "$IT_DIR/verify.log" 2>&1 || it_fail "systemd-analyze verify: $(cat "$IT_DIR/verify.log")"
    [ ! -s "$IT_DIR/verify.log" ] || it_fail "systemd-analyze verify warns: $(cat "$IT_DIR/verify.log")"
    it_log "systemd-analyze verify: no complaint"
else
    it_log "SKIP systemd-analyze verify: not installed (Debian package systemd)"
fi

mk uninstall DESTDIR="$root" > "$IT_DIR/uninstall.log" 2>&1 || it_fail "make uninstall failed"
left=$(cd "$root" && find . -type f | wc -l)
it_expect_eq "files left after make uninstall" "$left" 0
it_pass "binaries, man pages, example config and unit installed and checked"
