"""How grading jobs reach the judge: claimed from the database with a lease (the embedded
default), by worker processes that `flask worker` supervises. The grading core (service.grading)
knows nothing of databases; this package is the glue between the two."""
