#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Writes a Debian symbols file from a version script: every symbol with
# the node that exports it and the release that node appeared in.  A node
# LIBION_1 (or LIBION_DMABUFHEAP_1) is 1.0.0, LIBION_1.2 is 1.2.0: a new
# node per minor release, as the README's "Releasing" says.
#
# Usage: debian/symbols.sh SONAME PACKAGE DEV_PACKAGE VERSION_SCRIPT
#   debian/symbols.sh libion.so.1 libion1 libion-dev src/libion.sym > debian/libion1.symbols
# tests/check-deb.sh checks that the committed files are this output.
set -eu
soname=$1
package=$2
dev=$3
script=$4

echo "$soname $package #MINVER#"
echo "* Build-Depends-Package: $dev"
awk '
function release(node,    v) {
	v = node
	sub(/^[A-Z_]*_/, "", v)            # LIBION_1.2 -> 1.2
	if (v !~ /^[0-9]+(\.[0-9]+)?$/) {
		print "symbols.sh: node " node " names no version" > "/dev/stderr"
		exit 1
	}
	return v ~ /\./ ? v ".0" : v ".0.0"
}
/^[A-Z][A-Z0-9_.]* *\{/ { node = $1; sub(/\{.*/, "", node); ver = release(node)
	print " " node "@" node " " ver; next }
/^[ \t]*(global|local):/ { next }
node != "" && /^[ \t]*[A-Za-z_][A-Za-z0-9_]*;/ {
	sym = $1; sub(/;.*/, "", sym); print " " sym "@" node " " ver }
/^}/ { node = "" }
' "$script" | LC_ALL=C sort
