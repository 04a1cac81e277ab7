# Sourced by the bench/h200_*.sh scripts: h200_build NAME TARBALL ROOT [CONFIGURE ARGS...]
# unpacks TARBALL into ROOT/NAME (emptied first) and builds it there with
# --with-cuda-arch=90, logs in $out/configure-NAME.log and $out/make-NAME.log; prints
# "build NAME rc=N" and comes back to the folder it was called from.
h200_build() {
    local name=$1 tarball=$2 root=$3 here=$PWD
    shift 3
    rm -rf "$root/$name" && mkdir -p "$root/$name" && tar -C "$root/$name" -xzf "$tarball" &&
        cd "$root/$name"/convoy-* &&
        ./configure --with-cuda-arch=90 "$@" >"$out/configure-$name.log" 2>&1 &&
        make -j16 >"$out/make-$name.log" 2>&1
    echo "build $name rc=$?"
    cd "$here" || return 1
}
