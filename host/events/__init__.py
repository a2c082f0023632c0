"""One event, from its actor's lock to its end, and what it is for: the actor classes
(classes.py), requests and actor calls (requests.py; to another process or node through
remote.py's protocol), alarms (alarms.py), held answers (holds.py), the actors kept in
memory (actor_slot.py, slot_table.py), their instances' source (instance_source.py),
letting actors go (eviction.py), the event itself (event.py, call_graph.py,
lifecycle.py, guest_call.py; what it is handed of the actors' side, actor_parts.py),
what follows it (settle.py, trapped.py, guest_log.py, schema_learning.py); the seams
between those parts (seams.py) and what a probe is told of them (observe.py)."""
