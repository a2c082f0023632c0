"""The documents' shell transcripts, run as written (tests/docs/test_transcripts.py).

The convention, for README.md and docs/*.md:

- A ```console block is a transcript, and is run. Its `$ ` lines are commands (a line
  ending in `\\` goes on to the next); the lines beneath a command are what it prints.
  A fenced block of another kind whose first line is a `$ ` command is refused: make it
  ```console, or mark it skipped.
- The blocks of one document run in order, in one bash session, from a fresh directory
  that looks like a checkout's top (runner.py says what it links and substitutes).
- Output that varies is compared by its shape: times, durations, sizes, fuel, pids,
  hashes (matching.py). A UUID shown stands for the one the run printed there, in the
  commands and output after it too. A line `...` stands for any lines; `...` inside a
  line, for any text. A build's and a compile's lines depend on the caches and are not
  compared.
- A command that exits non-zero fails the run: a transcript that shows a failure says
  `; echo $?`.
- `cmd &` is a background job: the lines beneath it are waited for (`wkhost: listening
  on ...`: a user waits for it too) before the next command. The server's log lines
  (`ts=...`) shown beneath later commands are looked for in its output.
- Markers, HTML comments on the line(s) just before a fenced block, unseen on a
  rendered page:
    <!-- transcript: skip REASON -->   not run (a cluster, a chaos run, an excerpt)
    <!-- transcript: file NAME -->     the block (say ```python) is the file NAME
    <!-- transcript: until N s -->     repeat the block's first command until its
                                       output matches, at most N s ("a minute later")
"""
