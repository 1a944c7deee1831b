#!/usr/bin/env python3
"""Writes the doctor's Info.plist fixtures, each as XML (NAME.plist) and binary (NAME-binary.plist).

Run from this folder: python3 make-plists.py. DoctorPlistTests asserts each file's findings.
"""
import plistlib

GOOD_ENDPOINTS = {
    "NSAdvertisingAttributionReportEndpoint": "https://example.com",
    "AttributionCopyEndpoint": "https://example.com",
}

FIXTURES = {
    # Every key set right: no findings.
    "good": {
        "CFBundleIdentifier": "com.example.game",
        "NSAppTransportSecurity": {"NSAllowsArbitraryLoads": False},
        **GOOD_ENDPOINTS,
        "SKAdNetworkItems": [
            {"SKAdNetworkIdentifier": "cstr6suwn9.skadnetwork"},
            {"SKAdNetworkIdentifier": "4fzdc2evr5.skadnetwork"},
        ],
        "AdNetworkIdentifiers": ["example123.adattributionkit", "cstr6suwn9.skadnetwork"],
        "AdAttributionKitConfigurations": {
            "AttributionWindows": {
                "global": {"install": {"view": 3, "click": 30}},
                "example123.adattributionkit": {"install": {"click": 23, "view": 1, "ignoreInteractionType": "view"}},
            },
            "AttributionCooldown": {"install-cooldown-hours": 24, "re-engagement-cooldown-hours": 0},
        },
        "EligibleForAdAttributionKitOverlappingConversions": True,
        "EligibleForAdAttributionKitReengagementPostbackCopies": False,
    },
    # The endpoint keys: nested, missing, not a bare https domain.
    "bad-endpoints": {
        "NSAppTransportSecurity": {
            "NSAllowsArbitraryLoads": False,
            "NSAdvertisingAttributionReportEndpoint": "https://example.com",
        },
        "AttributionCopyEndpoint": "http://Postbacks.Example.com:8443/.well-known/appattribution/report-attribution/?x=1",
        "AdAttributionKit": {"AttributionCopyEndpoint": "https://example.com"},
    },
    "bad-endpoint-values": {
        "NSAdvertisingAttributionReportEndpoint": 1,
        "AttributionCopyEndpoint": " https://example.co.uk ",
    },
    # Ad network IDs: upper-case, malformed, wrong types, missing, duplicates.
    "bad-networks": {
        **GOOD_ENDPOINTS,
        "SKAdNetworkItems": [
            {"SKAdNetworkIdentifier": "cstr6suwn9.skadnetwork"},
            {"SKAdNetworkIdentifier": "CSTR6SUWN9.skadnetwork"},
            {"SKAdNetworkIdentifier": "4fzdc2evr5"},
            {"SKAdNetworkIdentifier": 5},
            {},
            "v72qych5uu.skadnetwork",
            {"SKAdNetworkIdentifier": "ludvb6z3bs.skadnetwork "},
        ],
        "AdNetworkIdentifiers": ["example123.adattributionkit", "Example123.adattributionkit"],
    },
    # AdAttributionKitConfigurations and the Booleans: every range, type and place.
    "bad-configurations": {
        **GOOD_ENDPOINTS,
        "AdAttributionKitConfigurations": {
            "AttributionWindows": {
                "global": {"install": {"click": 31, "view": "3", "ignoreInteractionType": "view"}},
                "example123.adattributionkit": {
                    "install": {"view": 8, "click": 0, "ignoreInteractionType": "both", "clicks": 3},
                    "reengagement": {"click": 3},
                },
                "Example456.adattributionkit": {"install": {"click": 7.0}},
                "another.adattributionkit": {"click": 5},
                "click": 5,
            },
            "AttributionCooldown": {
                "install-cooldown-hours": 721,
                "reengagement-cooldown-hours": 24,
                "re-engagement-cooldown-hours": -1,
            },
            "install-cooldown-hours": 24,
            "Windows": {},
            "AttributionCopyEndpoint": "https://example.com",
        },
        "EligibleForAdAttributionKitOverlappingConversions": "YES",
        "EligibleForAdAttributionKitReengagementPostbackCopies": 1,
    },
    # Containers of the wrong type.
    "bad-types": {
        **GOOD_ENDPOINTS,
        "SKAdNetworkItems": {"SKAdNetworkIdentifier": "cstr6suwn9.skadnetwork"},
        "AdNetworkIdentifiers": "example123.adattributionkit",
        "AdAttributionKitConfigurations": [{"AttributionWindows": {}}],
    },
    # Not an Info.plist: the root is an array.
    "root-array": ["NSAdvertisingAttributionReportEndpoint"],
}

for name, value in FIXTURES.items():
    with open(f"{name}.plist", "wb") as f:
        plistlib.dump(value, f, fmt=plistlib.FMT_XML)
    with open(f"{name}-binary.plist", "wb") as f:
        plistlib.dump(value, f, fmt=plistlib.FMT_BINARY)

# A binary property list of a few hundred bytes whose 40 arrays each hold the next one twice
# (one object, two references): 2^40 values when read as a tree. The doctor refuses it
# (more than PropertyListReader.maximumValues) rather than expanding it.
shared = ["leaf"]
for _ in range(40):
    shared = [shared, shared]
with open("shared-references-binary.plist", "wb") as f:
    plistlib.dump({"NSAdvertisingAttributionReportEndpoint": "https://example.com", "Nested": shared}, f,
                  fmt=plistlib.FMT_BINARY)
