"""marshmallow schemas of the HTTP API: the one source of validation and of the OpenAPI spec."""
