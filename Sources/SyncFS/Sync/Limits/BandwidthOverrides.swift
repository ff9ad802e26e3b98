import SyncBackend

/// The limits `syncfs-mount limit` set, per direction: a rate, `off` (no limit, whatever the
/// options and the schedule say), or not set (nil: the options and the schedule decide). They
/// are kept in the state database until `limit --reset` (doc/SEMANTICS.md, "Bandwidth limits").
struct BandwidthOverrides: Sendable, Equatable {
    var upload: BandwidthRate??
    var download: BandwidthRate??

    init(upload: BandwidthRate?? = nil, download: BandwidthRate?? = nil) {
        self.upload = upload
        self.download = download
    }

    var isEmpty: Bool { upload == nil && download == nil }

    /// `up=2M;down=off`, the directions set only.
    var text: String {
        var parts: [String] = []
        if let upload { parts.append("up=\(upload.rateText)") }
        if let download { parts.append("down=\(download.rateText)") }
        return parts.joined(separator: ";")
    }

    /// Reads `text`; nil if any part is not `up=RATE` or `down=RATE`.
    init?(text: String) {
        for part in text.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { return nil }
            let rate: BandwidthRate?
            do throws(BandwidthRate.ParseError) { rate = try BandwidthRate.parse(pair[1]) } catch { return nil }
            switch pair[0] {
            case "up": upload = .some(rate)
            case "down": download = .some(rate)
            default: return nil
            }
        }
    }
}

/// Where a direction's limit in force comes from.
public enum BandwidthSource: String, Codable, Sendable {
    /// `--upload-limit` / `--download-limit` (or none given).
    case option
    /// The `--limit-schedule` entry in force.
    case schedule
    /// `syncfs-mount limit`.
    case command = "limit"
}

extension StateFact where Value == BandwidthOverrides {
    /// The limits `limit` set; absent when none is set.
    static var bandwidthOverrides: Self {
        .init(.bandwidthOverrides, encode: \.text, decode: BandwidthOverrides.init(text:))
    }
}
