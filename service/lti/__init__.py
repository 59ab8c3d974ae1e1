"""LTI 1.3 tool: OIDC login and launch, Deep Linking, and scores sent back with Assignment and
Grade Services. JOSE work is PyJWT's; this package holds the LTI rules around it."""
