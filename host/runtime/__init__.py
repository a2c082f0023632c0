"""The process's machinery, which knows no actor: the event threads (executor.py), the
run gate and the statement loan (run_gate.py), the places an event takes and lends
(run_places.py), the alarm heap's timer thread (scheduler.py), backpressure
(pending.py), admission of new actors (admission.py), the heap (memory.py) and the
janitor (janitor.py). It reads config and errors; storage and interfaces are above its
reach (the import contracts say so)."""
