#!/usr/bin/env bash
# A throwaway certificate authority and leaf certificates for DoctorEndpointTests, made at
# test time in the folder given (OpenSSL 3.0's `openssl ca` sets any start and end date):
#   ca.pem                      the authority (trust it with --ca-file)
#   good.pem / good-key.pem     localhost and 127.0.0.1, valid a year
#   expiring.pem                valid 10 more days
#   expired.pem                 expired 20 days ago
#   otherhost.pem               names other.example only
set -euo pipefail
cd "$1"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca-key.pem -out ca.pem \
    -days 3650 -subj "/CN=postbackd doctor test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
mkdir -p db
: >db/index.txt
echo 1000 >db/serial
cat >ca.cnf <<CNF
[ ca ]
default_ca = test
[ test ]
dir = .
database = db/index.txt
serial = db/serial
new_certs_dir = db
certificate = ca.pem
private_key = ca-key.pem
default_md = sha256
policy = anything
unique_subject = no
copy_extensions = copy
[ anything ]
commonName = supplied
CNF
leaf() { # name host start end
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1-key.pem" -out "$1.csr" \
        -subj "/CN=$2" -addext "subjectAltName=DNS:$2$3" 2>/dev/null
    openssl ca -batch -config ca.cnf -notext -in "$1.csr" -out "$1.pem" -startdate "$4" -enddate "$5" 2>/dev/null
}
now=$(date -u +%s)
utc() { date -u -d "@$1" +%Y%m%d%H%M%SZ; }
day=86400
leaf good localhost ",IP:127.0.0.1" "$(utc $((now - day)))" "$(utc $((now + 365 * day)))"
leaf expiring localhost ",IP:127.0.0.1" "$(utc $((now - day)))" "$(utc $((now + 10 * day)))"
leaf expired localhost ",IP:127.0.0.1" "$(utc $((now - 60 * day)))" "$(utc $((now - 20 * day)))"
leaf otherhost other.example "" "$(utc $((now - day)))" "$(utc $((now + 365 * day)))"
