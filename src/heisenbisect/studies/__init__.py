"""One home per study kind, owning its lifecycle: build from the spec, drive on the runner it
is handed, finish, exit code, answer. The faces (`heisenbisect.api`, `heisenbisect.commands`)
only call them: screening (`screening`, one at a time or group), commits, amplify.

The deciding logic of each kind stays pure in `heisenbisect.decide`; what every kind shares
(its store bound to the spec, trial ids, the options, the run record) lives here beside them.
"""
