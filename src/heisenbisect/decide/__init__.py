"""The deciding logic, pure: statistics, screening, commit bisection. No I/O lives here."""
