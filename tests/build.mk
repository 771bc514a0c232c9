# tests/build.mk: build rules of tests/ (included by the top Makefile).
