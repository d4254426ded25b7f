import SecurOTPCore

/// Left-aligned columns separated by two spaces: the text output of list-like commands.
/// Every cell is escaped (TerminalText): user names, details and nicknames come from outside,
/// and no control or bidi character of theirs reaches the terminal or starts a line.
public enum TextTable {
    public static func render(_ header: [String], _ rows: [[String]]) -> String {
        let rows = rows.map { $0.map(TerminalText.escaped) }
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            var text = ""
            for (index, cell) in cells.enumerated() {
                let width = index < widths.count ? widths[index] : cell.count
                text += index == cells.count - 1 ? cell : cell + String(repeating: " ", count: width - cell.count + 2)
            }
            return text
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }
}
