import PostbackKit

/// The staleness warning from the times of the last ingest that accepted something, of the
/// last aggregate run, of the last campaign mapping change and of the last aggregate run over
/// every day (ISO 8601 text, or nil when there is none), and whether aggregate rows written
/// before the section 9 dimensions remain (`staleRows`).
package func stalenessWarning(
    lastIngest: String?,
    lastAggregate: String?,
    lastMappingChange: String? = nil,
    lastWholeAggregate: String? = nil,
    staleRows: Bool = false,
    lastModelChange: String? = nil
) -> String? {
    guard let lastAggregate else {
        return lastIngest == nil ? nil : "no aggregate rows yet: run postbackd aggregate first"
    }
    var warnings: [String] = []
    if let lastIngest, lastIngest > lastAggregate {
        warnings.append(
            "postbacks were ingested after the last aggregate run (\(lastAggregate)); run postbackd aggregate to include them"
        )
    }
    if staleRows {
        warnings.append(
            "some aggregate rows were computed before install dates, crowd-anonymity tiers, campaigns and conversion types were stored; run postbackd aggregate (every day) to recompute them"
        )
    }
    // A mapping applies to every day: only a run over every day since applies it everywhere.
    if let lastMappingChange, lastMappingChange > (lastWholeAggregate ?? "") {
        warnings.append(
            "campaign mappings changed after the last aggregate run over every day; run postbackd aggregate to apply them"
        )
    }
    if let lastModelChange, lastModelChange > lastAggregate {
        warnings.append(
            "a conversion model in force from before it was added came after the last aggregate run; run postbackd aggregate over the days postbackd models add named"
        )
    }
    return warnings.isEmpty ? nil : warnings.joined(separator: "\n")
}
