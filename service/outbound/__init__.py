"""What the service sends to other systems: LTI scores and webhook events, and the HTTP they use."""
