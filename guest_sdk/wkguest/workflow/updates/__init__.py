"""Updates: messages that change a running instance and answer once it has applied
them (`wf.on_update`, the update route, update-with-start). taking.py says how."""
