#!/usr/bin/env python3
"""CPU time per thread name of one postbackd run, per postback.

    scripts/thread-cpu.py N COMMAND...

Runs COMMAND (its output discarded), reads /proc/PID/task/*/stat every 20 ms while it runs,
and prints the wall time, the rate (N postbacks over the wall time) and, per thread name
(postbackd names its threads: pbd-reader, pbd-writer, pbd-verify-N, pbd-output,
pbd-checkpoint), the threads, their CPU seconds and microseconds per postback. A thread's time
is its last reading: at most 20 ms of a thread that ran to the end is missed. Linux only.
"""
import collections
import os
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n = int(sys.argv[1])
    command = sys.argv[2:]
    tick = os.sysconf("SC_CLK_TCK")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen = {}
    started = time.time()
    while process.poll() is None:
        try:
            tasks = os.listdir(f"/proc/{process.pid}/task")
        except OSError:
            tasks = []
        for tid in tasks:
            try:
                with open(f"/proc/{process.pid}/task/{tid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2 :].split()
            seen[tid] = (name, (int(fields[11]) + int(fields[12])) / tick)
        time.sleep(0.02)
    wall = time.time() - started
    errors = process.stderr.read().decode(errors="replace")
    if process.returncode not in (0, 1):
        sys.stderr.write(errors[-2000:])
    by_name = collections.defaultdict(lambda: [0, 0.0])
    for name, cpu in seen.values():
        # pbd-verify-1 … pbd-verify-16 are one row: the verifiers.
        key = "pbd-verify-*" if name.startswith("pbd-verify-") else name
        by_name[key][0] += 1
        by_name[key][1] += cpu
    print(f"wall {wall:.2f} s, {n / wall:,.0f}/s, exit {process.returncode}")
    for name, (threads, cpu) in sorted(by_name.items(), key=lambda item: -item[1][1]):
        print(f"  {name:16} threads {threads:2}  cpu {cpu:7.2f} s  {cpu * 1e6 / n:6.2f} us/postback")


if __name__ == "__main__":
    main()
