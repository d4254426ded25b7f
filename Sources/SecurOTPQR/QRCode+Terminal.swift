extension QRCode {
    /// UTF-8 half blocks (▀ ▄ █ and space), two module rows per text line, quiet zone of
    /// `quietZone` modules on every side (clamped to 0...64). Dark-on-light for a light terminal
    /// background is not guaranteed, so render LIGHT modules as the block glyphs (inverted)
    /// when `invert` is true; default false = dark modules drawn as blocks. Lines end with "\n".
    public func terminalString(quietZone: Int = 2, invert: Bool = false) -> String {
        let quietZone = min(max(quietZone, 0), Self.maxQuietZone)
        let side = size + 2 * quietZone
        // Ink = the glyph's foreground. Rows past the bottom edge (odd height) get no ink, so
        // the last line draws only its top half.
        func ink(_ x: Int, _ y: Int) -> Bool {
            guard y < side else { return false }
            let dark = isDark(x: x - quietZone, y: y - quietZone)
            return dark != invert
        }
        var out = ""
        out.reserveCapacity((side + 1) / 2 * (side * 3 + 1))
        for top in stride(from: 0, to: side, by: 2) {
            for x in 0..<side {
                switch (ink(x, top), ink(x, top + 1)) {
                case (true, true): out += "█"
                case (true, false): out += "▀"
                case (false, true): out += "▄"
                case (false, false): out += " "
                }
            }
            out += "\n"
        }
        return out
    }
}
