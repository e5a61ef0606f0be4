"""A reader that closes a command's output early (`| head -1`) ends the command quietly, with no traceback."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from tandem.cli.common import quiet_broken_pipe

@quiet_broken_pipe
def main():
    for i in range(200000):
        print("line", i)
    sys.exit(3)

main()
"""


def test_a_closed_reader_ends_the_command_quietly():
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"line 0\n"
    proc.stdout.close()  # as `head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_the_exit_status_stands_when_the_reader_reads_everything():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, timeout=60)
    assert out.returncode == 3 and out.stdout.count(b"\n") == 200000 and not out.stderr
