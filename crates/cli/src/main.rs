fn main() {
    println!("yari: under construction");
}
