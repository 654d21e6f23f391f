#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check-gst.sh PLUGIN_DIR: GStreamer's own tools take the plugin:
# gst-inspect-1.0 describes ionpool (with its chosen-heap property), and
# gst-launch-1.0 runs videotestsrc ! ionpool ! fakesink to the end, with
# ionpool's log naming the heap it chose.  Skips (77) without the tools.
set -eu
dir=${1:?usage: check-gst.sh PLUGIN_DIR}
for tool in gst-inspect-1.0 gst-launch-1.0; do
	command -v "$tool" >/dev/null || { echo "SKIP: no $tool (gstreamer1.0-tools)"; exit 77; }
done
export GST_PLUGIN_PATH="$dir"
out=$(gst-inspect-1.0 ionpool)
for want in 'Filename  *.*/libgstion.so' 'chosen-heap' 'devices' 'heap  '; do
	echo "$out" | grep -q -- "$want" || { echo "FAIL: gst-inspect-1.0 ionpool: no '$want'"; exit 1; }
done
log=$(GST_DEBUG=ionpool:4 GST_DEBUG_NO_COLOR=1 gst-launch-1.0 videotestsrc num-buffers=30 \
	! ionpool ! fakesink 2>&1) || { echo "FAIL: gst-launch-1.0:"; echo "$log"; exit 1; }
echo "$log" | grep 'pool from heap' || { echo "FAIL: ionpool chose no heap:"; echo "$log"; exit 1; }
echo "$log" | grep -q 'Got EOS' || { echo "FAIL: no EOS:"; echo "$log"; exit 1; }
echo ok
