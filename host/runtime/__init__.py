"""The process's machinery, which knows no actor: the event threads (executor.py), the
run gate (run_gate.py), the alarm heap's timer thread (scheduler.py), backpressure
(pending.py), admission of new actors (admission.py), the heap (memory.py) and the
janitor (janitor.py). It reads config and errors; storage and interfaces are above its
reach (the import contracts say so)."""
