"""The Python package of the real-work test (rpc/realwork_test.go)."""


def add(a, b):
    return a + b
