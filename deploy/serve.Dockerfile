# budgetgym-serve: `budgetgym serve ID` in a container, built without an image registry or network
# (`make serve-image`). The base is the coding image (`make coding-deps`: Debian bookworm's python3,
# made locally with debootstrap); the build context holds the wheels of budgetgym[serve,docker] and
# of pip, which `make serve-image` gathers on the host through its own package index.
FROM budgetgym/coding-python:bookworm-1
COPY wheels /wheels
# The base has no pip: pip runs from its own wheel. --break-system-packages: the image is this
# server's alone, so Debian's Python is the one it installs into.
RUN python3 "$(ls /wheels/pip-*.whl)/pip" install --no-cache-dir --no-index --find-links /wheels \
        --break-system-packages 'budgetgym[serve,docker]' \
    && rm -rf /wheels
EXPOSE 8000
ENTRYPOINT ["budgetgym", "serve"]
